"""URLs a webhook must not be sent to, and the local ones only development runs take."""

from tests.support.network import PUBLIC, LoopbackNetwork

# Refused in every kind of run.
HOSTILE_EVERYWHERE = [
    "https://169.254.169.254/latest/meta-data/",
    "http://169.254.169.254/latest/meta-data/",
    "https://10.0.0.1/hooks",
    "https://172.16.5.4/hooks",
    "https://192.168.1.10/hooks",
    "https://100.64.0.1/hooks",
    "https://0.0.0.0/hooks",
    "https://224.0.0.1/hooks",
    "https://255.255.255.255/hooks",
    "https://[::]/hooks",
    "https://[fc00::1]/hooks",
    "https://[fe80::1]/hooks",
    "https://[ff02::1]/hooks",
    # IPv6 forms carrying a refused IPv4 address: mapped, compatible, 6to4, NAT64.
    "https://[::ffff:a9fe:a9fe]/hooks",
    "https://[::ffff:127.0.0.1]/hooks",
    "https://[::ffff:10.0.0.1]/hooks",
    "https://[::7f00:1]/hooks",
    "https://[::a9fe:a9fe]/hooks",
    "https://[2002:a9fe:a9fe::1]/hooks",
    "https://[2002:7f00:1::1]/hooks",
    "https://[64:ff9b::a9fe:a9fe]/hooks",
    "https://[64:ff9b::7f00:1]/hooks",
    # IPv4 hosts spelled so that some resolvers read them as loopback.
    "http://2130706433/hooks",
    "https://2130706433/hooks",
    "https://0177.0.0.1/hooks",
    "https://0x7f.0.0.1/hooks",
    "https://127.1/hooks",
    "https://017700000001/hooks",
    # Names whose addresses are refused: every address of a name is checked.
    "https://metadata.internal.example.com/latest",
    "https://mixed.example.com/hooks",
]
# Local receivers: taken on development runs and the embedded default only.
LOCAL = [
    "http://127.0.0.1:9000/hooks",
    "https://127.0.0.1/hooks",
    "http://127.8.9.10:9000/hooks",
    "http://[::1]:9000/hooks",
    "https://[::1]/hooks",
    "http://localhost:9000/hooks",
    "https://localhost/hooks",
    "https://loopback.example.com/hooks",
]
# Plain http to a public host: a development run only.
PUBLIC_HTTP = ["http://hooks.example.com/hooks"]
HOSTILE_IN_A_DEPLOYMENT = HOSTILE_EVERYWHERE + LOCAL + PUBLIC_HTTP


def answer_hostile_names(network: LoopbackNetwork) -> None:
    """What the names above resolve to, on the test network."""
    network.answer("metadata.internal.example.com", ["169.254.169.254"])
    network.answer("mixed.example.com", [PUBLIC, "10.0.0.1"])
    network.answer("loopback.example.com", ["127.0.0.1"])
