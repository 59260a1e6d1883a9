from celery import shared_task
from django.utils import timezone

from cards.authorizations import authorizations_expire


@shared_task
def expire_card_authorizations() -> int:
    """Every 10 minutes (CELERY_BEAT_SCHEDULE): PENDING card authorizations of
    customers without a test clock, 7 days old, become EXPIRED (holds released)."""
    return authorizations_expire(timezone.now(), None)
