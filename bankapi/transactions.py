"""Transaction rules said in code: a function that must commit on its own checks
it is not inside a caller's transaction, and fails at once if it is."""

from django.db import transaction


def outside_transaction_require(what: str) -> None:
    """Raise RuntimeError when called inside a transaction.

    For work that must commit, or stay counted, whatever the caller does next:
    inside a caller's `transaction.atomic()` it would stay uncommitted (invisible
    to a concurrent request) and be rolled back with a later refusal. An empty
    durable block sends nothing to the database; Django lets it run inside a
    test case's own wrapping transaction, so tests on the `db` fixture still call
    such functions as a request does.
    """
    try:
        with transaction.atomic(durable=True, savepoint=False):
            pass
    except RuntimeError as exc:
        raise RuntimeError(
            f"{what} must run outside any transaction (it opens a durable block: what it commits "
            "must not wait for, or be undone with, the caller's transaction)"
        ) from exc
