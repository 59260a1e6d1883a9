"""A submitted batch made: the batch and its items in the caller's transaction,
its processing (`batches.services.processing`) queued after commit."""

from datetime import datetime

from authn.models import User
from bankapi.clock import customer_now
from bankapi.ids import write_ordered_uuid
from bankapi.tasks import task_publish_after_commit
from batches.actors import Actor
from batches.models import Batch, BatchItem, Draft
from batches.rules import CheckedItem
from batches.sent import FileInstruction
from batches.services.processing import ItemStatus, outcomes_count
from batches.tasks import process_batch


def batch_create(
    *,
    actor: Actor,
    user: User,
    checked: list[CheckedItem],
    currency: str | None,
    draft: Draft | None,
) -> Batch:
    """The batch and one item per payment sent; processing is queued after commit."""
    now = customer_now(actor.owner_fields()["owner_customer_id"])
    payer_customers = {item.payer.customer_id for item in checked if item.payer is not None}
    valid = sum(1 for item in checked if item.valid)
    batch = Batch.objects.create(
        id=draft.id if draft is not None else write_ordered_uuid(),
        program_id=actor.scope.program_id,
        sandbox=actor.scope.sandbox,
        **actor.owner_fields(),
        route_customer=actor.route_customer,
        customer_id=next(iter(payer_customers)) if len(payer_customers) == 1 else None,
        payments_count=len(checked),
        valid_count=valid,
        currency=currency or "",
        submitted_by=user,
        message_id=(draft.message_id or "") if draft is not None else "",
        message_name=draft.message_name if draft is not None else "",
    )
    instructions = draft.instruction_of_each_payment() if draft is not None else []
    BatchItem.objects.bulk_create(
        (
            _item(batch, item, now, draft, instructions[item.index] if instructions else None)
            for item in checked
        ),
        batch_size=1000,
    )
    outcomes_count(failed=len(checked) - valid)
    task_publish_after_commit(process_batch, str(batch.id))
    return batch


def _item(
    batch: Batch,
    checked: CheckedItem,
    now: datetime,
    draft: Draft | None,
    instruction: FileInstruction | None,
) -> BatchItem:
    """The item of one payment; from a file, with its EndToEndId, its payment
    instruction and that instruction's requested execution date."""
    payer = checked.payer
    sent = checked.payment
    return BatchItem(
        id=draft.item_id(checked.index) if draft is not None else write_ordered_uuid(),
        message_id=batch.message_id,
        payment_information_id=instruction.id if instruction else "",
        instruction_id=sent.instruction_id or "",
        end_to_end_id=sent.end_to_end_id or "",
        program_id=batch.program_id,
        sandbox=batch.sandbox,
        batch=batch,
        index=checked.index,
        status=ItemStatus.QUEUED if checked.valid else ItemStatus.FAILED,
        error="; ".join(checked.reasons),
        failure_code="" if checked.valid else BatchItem.INVALID,
        account=payer,
        customer_id=payer.customer_id if payer else None,
        payer_name=payer.customer.name if payer else "",
        payer_account_number=(payer.account_number or payer.iban) if payer else "",
        payee=checked.payee.to_stored(),
        amount=checked.amount,
        currency=checked.currency,
        reference=sent.reference or "",
        scheduled_date=instruction.execution_date if instruction else now.date(),
    )
