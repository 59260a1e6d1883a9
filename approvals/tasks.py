from celery import shared_task

from approvals.services import approvals_expire


@shared_task
def expire_approvals() -> int:
    """Every minute (CELERY_BEAT_SCHEDULE): pending approvals past their expiry become EXPIRED."""
    return approvals_expire()
