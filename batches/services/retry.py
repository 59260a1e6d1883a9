"""Retrying a failed batch item (a back-office action).

Only an item that passed every rule at submit and failed later for funds or a
limit (its payer could not fund it, or acceptance refused it) is retried, once
its batch has finished; an item invalid at submit is never paid, by any route
or action. The retry decides on the item's stored instruction, as it was given,
with the acceptance decision processing applies (`payments.decision`: the
currency rule, the limits, the funds): a refusal leaves the item FAILED with its
new reason and moves nothing.

Accepted, it places a new hold for the item's amount and fee (its first hold,
if it had one, was released when it failed), puts the batch back to FUNDED, and
the batch's own processing pays the item from that hold (chunk claim, the same
decision again, `BatchItem.payment` unique) and settles the batch's status again.
"""

import uuid

from django.db import transaction
from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode
from bankapi.models import Program
from bankapi.tasks import task_publish_after_commit
from batches.models import Batch, BatchItem
from batches.services.processing import item_failure
from payments.decision import Instruction, Refused, Rules, Snapshot, decide, payment_needs
from payments.errors import PaymentErrorCode
from payments.ledger import HoldOrder, lock_accounts
from payments.services.held import funds_hold

# The refusals after submit that a retry may answer differently: money or a
# day's limit may have come back since.
RETRYABLE = frozenset({PaymentErrorCode.INSUFFICIENT_FUNDS, PaymentErrorCode.LIMIT_EXCEEDED})


def _refuse_unretryable(item: BatchItem, batch: Batch) -> None:
    if batch.status not in Batch.FINAL:
        raise ApiError(ErrorCode.INVALID_STATE, "The batch is still being processed; retry once it ends.")
    if item.status != BatchItem.Status.FAILED or item.payment_id is not None:
        raise ApiError(ErrorCode.INVALID_STATE, f"A {item.status} item cannot be retried.")
    if item.failure_code == BatchItem.INVALID:
        raise ApiError(
            ErrorCode.INVALID_STATE, f"The item was invalid at submit and is never paid ({item.error})."
        )
    if item.failure_code not in RETRYABLE:
        raise ApiError(
            ErrorCode.INVALID_STATE,
            f"Only an item refused for funds or a limit is retried; this one failed with {item.error}",
        )


def batch_item_retry(*, item: BatchItem) -> BatchItem:
    """Decide a FAILED item's stored instruction again and, accepted, hold its
    funds and queue it to be paid by the batch's processing. Refuses
    (INVALID_STATE) while the batch is still running, and for an item not FAILED,
    already paid, invalid at submit or failed for another reason; a refusal of
    the decision (funds still short, a limit, a currency not the payer's) leaves
    the item FAILED with the new reason."""
    from batches.tasks import process_batch

    with transaction.atomic():
        # The batch row first, as processing locks it: a retry cannot interleave
        # with a run finishing the batch.
        batch = Batch.objects.select_for_update().get(id=item.batch_id)
        locked = BatchItem.objects.select_for_update().get(id=item.id)
        _refuse_unretryable(locked, batch)
        instruction = locked.instruction()
        # Only a valid item fails for funds or a limit, and a valid item has both.
        assert instruction.account_id is not None and instruction.amount is not None
        program = Program.objects.get(id=batch.program_id)
        # Locked until the end: funds that pass the decision are still there
        # when they are held.
        account = lock_accounts([instruction.account_id])[instruction.account_id]
        decided = decide(
            Rules.of(program),
            Snapshot.of(account),
            Instruction(debit=instruction.amount, amount=instruction.amount, currency=instruction.currency),
            now=customer_now(account.customer_id),
        )
        if isinstance(decided, Refused):
            return _failed_again(locked, decided)
        hold = HoldOrder(
            id=uuid.uuid4(),
            account_id=instruction.account_id,
            amount=payment_needs(decided.debit, decided.fee),
            memo=f"Batch {batch.id} item {locked.index} retry",
        )
        refusal = funds_hold([hold])[instruction.account_id]
        if refusal is not None:
            return _failed_again(locked, refusal)
        locked.status, locked.error, locked.failure_code, locked.hold_id, locked.updated_at = (
            BatchItem.Status.QUEUED,
            "",
            "",
            hold.id,
            timezone.now(),
        )
        locked.save(update_fields=["status", "error", "failure_code", "hold", "updated_at"])
        batch.status = Batch.Status.FUNDED
        batch.save(update_fields=["status", "updated_at", "progressed_at"])
        task_publish_after_commit(process_batch, str(batch.id))
    return locked


def _failed_again(item: BatchItem, refusal: Refused) -> BatchItem:
    for name, value in item_failure(refusal).items():
        setattr(item, name, value)
    item.updated_at = timezone.now()
    item.save(update_fields=["error", "failure_code", "updated_at"])
    return item
