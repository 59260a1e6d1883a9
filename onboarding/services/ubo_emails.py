"""A UBO's verification e-mail: sent by its task (`onboarding.tasks`), settled
once it left or gave up, and found again by the sweep when its task was lost."""

from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from onboarding.links import now_seconds, ubo_link_token
from onboarding.models import Ubo


def ubo_link(ubo: Ubo, pending: dict[str, Any]) -> str:
    """The signed link of the e-mail `pending` describes."""
    token = ubo_link_token(
        ubo,
        success_url=pending["successUrl"],
        reject_url=pending["rejectUrl"],
        expires_at=pending["expiresAt"],
    )
    return f"{pending['linkBase'].rstrip('/')}/v1/ubo-verification/{token}"


def ubo_emails_lost(grace: timedelta) -> list[tuple[str, str, int]]:
    """Verification e-mails still unsent `grace` after their task was due (the
    action's commit, or the retry its last attempt asked for), links not
    expired: (UBO id, link, expiry) to send again. Their task was lost: the
    broker was away, or a worker died with it."""
    now = now_seconds()
    late = now - grace.total_seconds()
    lost = []
    unsent = Ubo.objects.filter(email_pending__isnull=False, status=Ubo.Status.LINK_SENT)
    for ubo in unsent:
        pending: dict[str, Any] = ubo.email_pending or {}
        # Rows written before `dueAt` existed: due at their last write.
        due_at = pending.get("dueAt", ubo.updated_at.timestamp())
        if due_at <= late and pending.get("expiresAt", 0) > now:
            lost.append((str(ubo.id), ubo_link(ubo, pending), int(pending["expiresAt"])))
    return lost


def ubo_email_settled(ubo_id: str, *, done: bool, retry_in_seconds: float = 0) -> None:
    """Done (the e-mail left, or gave up for good): the sweep no longer sends it.
    Not done (a retry is due in `retry_in_seconds`): the sweep waits for that
    retry to be late before it sends the e-mail itself."""
    if done:
        Ubo.objects.filter(id=ubo_id).update(email_pending=None, updated_at=timezone.now())
        return
    with transaction.atomic():
        ubo = Ubo.objects.select_for_update().filter(id=ubo_id, email_pending__isnull=False).first()
        if ubo is not None:
            ubo.email_pending = {**(ubo.email_pending or {}), "dueAt": now_seconds() + int(retry_in_seconds)}
            ubo.save(update_fields=["email_pending", "updated_at"])


def ubo_verification_email_send(*, ubo: Ubo, link: str, expires_at: int) -> None:
    company = ubo.application.customer.name
    until = datetime.fromtimestamp(expires_at, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    send_mail(
        subject=f"Verify your identity for {company}",
        message=(
            f"Hello {ubo.first_name},\n\n"
            f"{company} has named you as an ultimate beneficial owner. To complete its account "
            f"opening, please verify your identity here:\n\n{link}\n\n"
            f"The link works until {until}.\n"
        ),
        from_email=None,
        recipient_list=[ubo.email],
    )
