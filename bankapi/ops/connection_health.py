"""The health check of a persistent PostgreSQL connection, without a round trip.

With `CONN_HEALTH_CHECKS`, Django checks a reused connection before the first
query of each request: `SELECT 1`, a round trip to the server on every request
(on a payment, a quarter of its statements). A connection the server or the
pooler closed (a restart, an idle timeout, `pg_terminate_backend`) has already
said so on its socket: the server's last message and the end of the stream
make it readable. A healthy idle connection's socket has nothing to read. So
the check looks at the socket first, without waiting: nothing to read, the
connection is usable; something to read (a closed connection, or a message the
server sent unasked), Django's own `SELECT 1` decides, as before. A connection
in any state but idle, or one psycopg already knows is closed or broken, is
judged as Django judges it.
"""

import select
import types
from typing import Any

from django.db.backends.signals import connection_created


def _is_usable(wrapper: Any) -> bool:
    from psycopg.pq import TransactionStatus

    raw = wrapper.connection
    if raw is None or raw.closed or raw.broken:
        return False
    if raw.info.transaction_status == TransactionStatus.IDLE:
        try:
            readable, _, _ = select.select([raw.fileno()], [], [], 0)
        except (OSError, ValueError):
            # A descriptor select() cannot watch (above FD_SETSIZE): Django decides.
            readable = [raw.fileno()]
        if not readable:
            return True
    return bool(type(wrapper).is_usable(wrapper))


def _check_cheaply(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "postgresql":
        connection.is_usable = types.MethodType(_is_usable, connection)


def connection_health_install() -> None:
    """Every PostgreSQL connection opened from now on is checked this way."""
    connection_created.connect(_check_cheaply, dispatch_uid="bankapi.ops.connection_health")
