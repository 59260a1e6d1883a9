"""verify: a draft stored at once and its verification queued (`batches.services.verification`)."""

from datetime import timedelta

from django.conf import settings

from bankapi.clock import customer_now
from bankapi.tasks import task_publish_after_commit
from batches.actors import Actor
from batches.iso20022.reading import Pain001
from batches.models import Draft
from batches.sent import SentPayment
from batches.tasks import verify_draft


def draft_ttl() -> timedelta:
    return timedelta(seconds=settings.BATCH_DRAFT_TTL_SECONDS)


def draft_create(*, actor: Actor, payments: list[SentPayment], document: Pain001 | None = None) -> Draft:
    """Store the draft (listed at once, payload PENDING) and queue its verification.

    With `document`, the draft is that file's: its payments are the file's
    transactions, and it keeps the file's MsgId and payment instructions.
    """
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
