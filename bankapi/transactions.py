"""Transaction rules said in code: a function that must commit on its own checks
it is not inside a caller's transaction, and fails at once if it is."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


def outside_transaction_require(what: str) -> None:
    """Raise RuntimeError when called inside a transaction.

    For work that must commit, or stay counted, whatever the caller does next:
    inside a caller's `transaction.atomic()` it would stay uncommitted (invisible
    to a concurrent request) and be rolled back with a later refusal. The test
    is Django's own for a durable block, read without opening one (which would
    switch the connection's autocommit off and on, on every payment): refused
    inside any atomic block but a test case's own wrapping transaction, so tests
    on the `db` fixture still call such functions as a request does.
    """
    blocks = connection.atomic_blocks
    if blocks and not blocks[-1]._from_testcase:  # type: ignore[attr-defined]  # Django's own test
        raise RuntimeError(
            f"{what} must run outside any transaction (it opens a durable block: what it commits "
            "must not wait for, or be undone with, the caller's transaction)"
        )


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Reads that must see the database at one moment (a statement, the ledger
    check), in one transaction: on PostgreSQL a REPEATABLE READ one when this
    opens it (inside a caller's transaction the reads share its rules); on
    SQLite any transaction reads one snapshot.

    Being in a transaction also keeps a streamed read (`QuerySet.iterator`, a
    server-side cursor) on one server connection: outside one, Django declares
    the cursor WITH HOLD and fetches in later statements, which PgBouncer in
    transaction pooling may send to another server, where the cursor does not
    exist."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield
