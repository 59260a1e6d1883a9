"""A draft's items checked (by the verification task `draft_create` queues), and
the drafts whose verification a lost task left unfinished."""

from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.models import Account
from batches.actors import payer_accounts_of
from batches.models import Draft, expired_in_own_time
from batches.rules import PayerBook, items_check
from batches.sent import CheckedPayment


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
