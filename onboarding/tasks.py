"""Celery tasks of onboarding: thin wrappers around the services."""

import logging
import smtplib
from datetime import timedelta

from celery import shared_task

from bankapi.tasks import task_in_process, task_publish
from onboarding.models import Ubo
from onboarding.services.ubos import ubo_email_settled, ubo_emails_lost, ubo_verification_email_send

logger = logging.getLogger(__name__)

EMAIL_MAX_RETRIES = 5
# Longer than a task's whole retry schedule (30 s + 1 + 2 + 4 + 8 min): an e-mail
# still unsent this long after its last attempt lost its task.
EMAIL_LOST_AFTER = timedelta(minutes=20)


@shared_task(bind=True, max_retries=EMAIL_MAX_RETRIES)
def send_ubo_verification_email(self, ubo_id: str, link: str, expires_at: int) -> bool:
    """E-mail a UBO its verification link; a failed delivery is retried.

    On a worker each retry waits in the queue with exponential backoff (30 s,
    1 min, 2 min, ...). Run in-process (no broker, the embedded default) there is
    no queue to wait in, so the attempts follow one another at once. After the
    last attempt the failure is logged, never raised: the action that sent the
    link has been answered already. Returns whether the e-mail left.
    """
    ubo = Ubo.objects.select_related("application__customer").filter(id=ubo_id).first()
    if ubo is None:
        return False
    attempts = EMAIL_MAX_RETRIES + 1 if task_in_process(self) else 1
    error: Exception | None = None
    for _ in range(attempts):
        try:
            ubo_verification_email_send(ubo=ubo, link=link, expires_at=expires_at)
            ubo_email_settled(ubo_id, done=True)
            return True
        except (smtplib.SMTPException, OSError) as exc:
            error = exc
    if task_in_process(self) or self.request.retries >= EMAIL_MAX_RETRIES:
        logger.error("UBO verification e-mail to UBO %s failed for good: %s", ubo_id, error)
        ubo_email_settled(ubo_id, done=True)
        return False
    ubo_email_settled(ubo_id, done=False)
    raise self.retry(exc=error, countdown=30 * 2**self.request.retries)


@shared_task
def resend_lost_ubo_emails(older_than_seconds: float = EMAIL_LOST_AFTER.total_seconds()) -> int:
    """Beat sweep: queue again the verification e-mails whose task was lost (the
    broker away when the action committed, a worker killed). Answers how many."""
    lost = ubo_emails_lost(timedelta(seconds=older_than_seconds))
    for ubo_id, link, expires_at in lost:
        task_publish(send_ubo_verification_email, ubo_id, link, expires_at)
    return len(lost)
