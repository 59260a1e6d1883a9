"""A reused PostgreSQL connection is checked without a round trip, and one the
server closed is still found unusable before a request reuses it."""

import time

import pytest
from django.db import connection, connections

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the check reads a PostgreSQL socket"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def _fresh_connection_after():
    """A test that fails with the connection terminated leaves no broken
    connection to the database teardown and the tests after it."""
    yield
    connection.close()


def test_an_idle_healthy_connection_is_usable_without_a_statement(tmp_path):
    connection.ensure_connection()
    raw = connection.connection
    trace = tmp_path / "trace"
    with trace.open("wb") as out:
        raw.pgconn.trace(out.fileno())
        try:
            assert connection.is_usable() is True
            with connection.cursor() as cursor:
                cursor.execute("SELECT 41 + 1")
                assert cursor.fetchone() == (42,)
        finally:
            raw.pgconn.untrace()

    # Only the statement above went to the server: the check sent nothing.
    sent = [row.split("\t") for row in trace.read_text(errors="replace").splitlines()]
    queries = [
        fields[4]
        for fields in sent
        if len(fields) > 4 and fields[1] == "F" and fields[3] in ("Query", "Parse")
    ]
    assert len(queries) == 1 and "41 + 1" in queries[0]


def test_a_connection_the_server_closed_is_unusable_and_replaced_before_reuse():
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            # With a timeout, the call returns once the backend has exited (not
            # when the signal is sent), so its last message has been written.
            cursor.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
    finally:
        other.close()
    # The server's FATAL message and the end of the stream reach the socket.
    deadline = time.monotonic() + 10
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert connection.is_usable() is False

    # As on a request's start: the health check drops it, the next query reconnects.
    connection.health_check_done = False
    connection.close_if_health_check_failed()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid
