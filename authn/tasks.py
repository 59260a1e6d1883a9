from celery import shared_task

from authn.services.cleanup import auth_records_purge


@shared_task
def purge_auth_records() -> dict[str, int]:
    """Daily (CELERY_BEAT_SCHEDULE): expired sessions, dead refresh tokens, stale lockouts."""
    return auth_records_purge()
