"""The kernel's Celery tasks: thin wrappers around its services, safe to run twice."""

from celery import shared_task

from bankapi.idempotency import idempotency_records_purge


@shared_task
def purge_idempotency_records() -> int:
    """Delete idempotency keys past their retention (7 days), for every domain."""
    return idempotency_records_purge()
