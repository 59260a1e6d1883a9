"""Celery tasks: thin wrappers around the services, safe to run twice."""

from celery import shared_task

from payments.services.idempotency import idempotency_records_purge
from payments.services.settlement import payments_settle_pending


@shared_task
def settle_pending_payments() -> int:
    """Settle production PENDING requests. Sandbox requests never settle on their
    own: integrators drive them with the sandbox routes or `manage.py settle_payments`."""
    return payments_settle_pending(sandbox=False)


@shared_task
def purge_idempotency_records() -> int:
    return idempotency_records_purge()
