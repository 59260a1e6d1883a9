"""The test network every test runs on: nothing leaves loopback, and no name
server is asked (tests/support/network.py)."""

import socket

import pytest
import urllib3

from tests.support.network import PUBLIC
from tests.support.receiver import start_receiver


def test_a_connection_off_loopback_is_refused_and_recorded(loopback_network):
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((PUBLIC, 443), timeout=1)
    with pytest.raises(urllib3.exceptions.NewConnectionError):
        urllib3.PoolManager(retries=False).connection_from_url("http://10.0.0.1/")._new_conn().connect()

    assert loopback_network.refused == [(PUBLIC, 443), ("10.0.0.1", 80)]


def test_names_come_from_the_table_never_from_a_name_server(loopback_network):
    loopback_network.answer("flip.example.com", [PUBLIC], ["127.0.0.1"])

    first = {info[4][0] for info in socket.getaddrinfo("flip.example.com", 443)}
    second = {info[4][0] for info in socket.getaddrinfo("flip.example.com", 443)}

    assert (first, second) == ({PUBLIC}, {"127.0.0.1"})
    assert {info[4][0] for info in socket.getaddrinfo("hooks.example.com", 443)} == {PUBLIC}
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("pypi.org", 443)


def test_loopback_and_routed_public_addresses_go_through(loopback_network):
    receiver, server = start_receiver()
    port = server.server_address[1]
    loopback_network.route(PUBLIC, port, to=("127.0.0.1", port))
    try:
        for address in ("127.0.0.1", PUBLIC):
            with socket.create_connection((address, port), timeout=5):
                pass
    finally:
        server.shutdown()
        server.server_close()

    assert loopback_network.connected == [("127.0.0.1", port), (PUBLIC, port)]
    assert loopback_network.refused == []
