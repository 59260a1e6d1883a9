"""Celery tasks of onboarding: thin wrappers around the services."""

import logging
import smtplib
from datetime import timedelta

from celery import shared_task

from bankapi.tasks import task_in_process, task_publish
from onboarding.models import Ubo
from onboarding.services.ubo_emails import ubo_email_settled, ubo_emails_lost, ubo_verification_email_send

logger = logging.getLogger(__name__)

EMAIL_MAX_RETRIES = 5
# An e-mail still unsent this long after its task was due (the action's commit, or
# the retry its last attempt scheduled) lost its task. With the sweep every 30 s
# (config.beat), a lost e-mail is taken up within 90 s of when it was due. A task
# merely late by more than this (a worker swamped for a minute) may send it twice:
# a second copy of the same link, which is harmless, where a lost one is not.
EMAIL_LOST_AFTER = timedelta(seconds=60)


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
    countdown = 30 * 2**self.request.retries
    ubo_email_settled(ubo_id, done=False, retry_in_seconds=countdown)
    raise self.retry(exc=error, countdown=countdown)


@shared_task
def resend_lost_ubo_emails(older_than_seconds: float = EMAIL_LOST_AFTER.total_seconds()) -> int:
    """Beat sweep: queue again the verification e-mails whose task was lost (the
    broker away when the action committed, a worker killed). Answers how many."""
    lost = ubo_emails_lost(timedelta(seconds=older_than_seconds))
    for ubo_id, link, expires_at in lost:
        task_publish(send_ubo_verification_email, ubo_id, link, expires_at)
    return len(lost)
