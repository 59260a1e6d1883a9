"""The network as tests see it: a fake name server and a wire that stays on loopback.

Installed for every test (tests/conftest.py), at the socket module, under any
client library: `socket.getaddrinfo` answers from a table instead of asking a
name server, and `socket.socket.connect` goes through only to loopback, or to a
loopback receiver a test routed a public address to. Anything else is refused
and recorded, so a test can assert what the service tried to reach without a
single packet leaving the machine.
"""

import errno
import ipaddress
import socket
from dataclasses import dataclass, field

# A public address (example.com's). Tests name it, the service checks it, and the
# wire refuses it (or hands it to a loopback receiver): nothing is ever sent there.
PUBLIC = "93.184.215.14"
PUBLIC_V6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _is_local(host: str) -> bool:
    if host == "localhost":
        return True
    return _is_literal(host) and ipaddress.ip_address(host.split("%", 1)[0]).is_loopback


@dataclass
class LoopbackNetwork:
    # name -> the answers of successive look-ups (the last one repeats).
    names: dict[str, list[list[str]]] = field(default_factory=dict)
    # (public address, port) -> the loopback (address, port) that stands in for it.
    routes: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    looked_up: list[str] = field(default_factory=list)
    connected: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)

    def answer(self, name: str, *answers: list[str]) -> None:
        self.names[name] = list(answers)

    def route(self, address: str, port: int, to: tuple[str, int]) -> None:
        self.routes[(address, port)] = to

    def _answers(self, host: str) -> list[str] | None:
        if host in self.names:
            seen = self.looked_up.count(host)
            answers = self.names[host]
            return answers[min(seen, len(answers) - 1)]
        if host.rstrip(".").endswith(".example.com") or host.rstrip(".") == "example.com":
            return [PUBLIC]
        return None

    def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):
        if host is None or isinstance(host, bytes) or _is_literal(host) or host == "localhost":
            return _real_getaddrinfo(host, port, family, type, proto, flags)
        answers = self._answers(host)
        self.looked_up.append(host)
        if answers is None:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not in the test name server")
        found = []
        for address in answers:
            found += _real_getaddrinfo(address, port, family, type, proto, flags | socket.AI_NUMERICHOST)
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} has no address of that family")
        return found

    def _where(self, address) -> tuple | None:
        """Where a connection really goes, or None if it must not."""
        if not isinstance(address, tuple):
            return address  # a Unix socket
        host, port = address[0], address[1]
        if (host, port) in self.routes:
            return self.routes[(host, port)]
        return address if _is_local(host) else None

    def connect(self, sock, address):
        where = self._where(address)
        if where is None:
            self.refused.append((address[0], address[1]))
            raise ConnectionRefusedError(
                errno.ECONNREFUSED, f"the test network refuses {address[0]}:{address[1]} (off loopback)"
            )
        if isinstance(address, tuple):
            self.connected.append((address[0], address[1]))
        return _real_connect(sock, where)

    def connect_ex(self, sock, address):
        where = self._where(address)
        if where is None:
            self.refused.append((address[0], address[1]))
            return errno.ECONNREFUSED
        return _real_connect_ex(sock, where)


def install_loopback_network(monkeypatch) -> LoopbackNetwork:
    network = LoopbackNetwork()
    monkeypatch.setattr(socket, "getaddrinfo", network.getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", lambda sock, address: network.connect(sock, address))
    monkeypatch.setattr(socket.socket, "connect_ex", lambda sock, address: network.connect_ex(sock, address))
    return network
