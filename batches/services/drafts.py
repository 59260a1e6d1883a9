"""verify: a draft stored at once, its items checked by a Celery task."""

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.models import Account
from bankapi.tasks import task_publish_after_commit
from batches.actors import Actor, payer_accounts_of
from batches.iso20022.reading import Pain001
from batches.models import Draft, expired_in_own_time
from batches.rules import PayerBook, items_check
from batches.sent import CheckedPayment, SentPayment


def draft_ttl() -> timedelta:
    return timedelta(seconds=settings.BATCH_DRAFT_TTL_SECONDS)


def draft_create(*, actor: Actor, payments: list[SentPayment], document: Pain001 | None = None) -> Draft:
    """Store the draft (listed at once, payload PENDING) and queue its verification.

    With `document`, the draft is that file's: its payments are the file's
    transactions, and it keeps the file's MsgId and payment instructions.
    """
    from batches.tasks import verify_draft

    draft = Draft.objects.create(
        program_id=actor.scope.program_id,
        sandbox=actor.scope.sandbox,
        **actor.owner_fields(),
        route_customer=actor.route_customer,
        payments=[payment.to_stored() for payment in payments],
        payments_count=len(payments),
        expires_at=customer_now(actor.owner_fields()["owner_customer_id"]) + draft_ttl(),
        message_id=document.message_id if document is not None else None,
        message_name=document.message_name if document is not None else "",
        instructions=[i.to_stored() for i in document.instructions] if document is not None else None,
    )
    task_publish_after_commit(verify_draft, str(draft.id))
    return draft


def draft_verify(draft_id: str) -> None:
    """Check every item of the draft and keep the valid and the invalid ones.

    Safe to run twice (a redelivered task): it recomputes the same result from
    the same payments and the same accounts.
    """
    draft = Draft.objects.filter(id=draft_id, submitted_at__isnull=True).first()
    if draft is None or draft.verified_at is not None:
        return
    actor_accounts = _payer_accounts_of(draft)
    checked, _currency = items_check(draft.sent_payments(), PayerBook.of(actor_accounts))
    results = [CheckedPayment(c.index, c.payment, tuple(c.reasons)) for c in checked]
    draft.valid_payments = [result.to_stored() for result in results if result.valid]
    draft.invalid_payments = [result.to_stored() for result in results if not result.valid]
    draft.verified_at = customer_now(draft.owner_customer_id)
    draft.save(update_fields=["valid_payments", "invalid_payments", "verified_at", "updated_at"])


def _payer_accounts_of(draft: Draft) -> QuerySet[Account]:
    """The accounts the draft's owner may pay from."""
    return payer_accounts_of(
        program_id=draft.program_id,
        sandbox=draft.sandbox,
        custodian_id=draft.custodian_id,
        owner_customer_id=draft.owner_customer_id,
        route_customer_id=draft.route_customer_id,
    )


def drafts_stalled(older_than: timedelta) -> list[str]:
    """Drafts whose verification has not finished (a lost task): to queue again.
    How long they waited is real time; whether they expired, their owner's time."""
    cutoff = timezone.now() - older_than
    return [
        str(draft_id)
        for draft_id in Draft.objects.filter(
            verified_at__isnull=True, submitted_at__isnull=True, written_at__lt=cutoff
        )
        .exclude(expired_in_own_time())
        .values_list("id", flat=True)
    ]
