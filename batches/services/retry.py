"""Retrying a failed batch item (a back-office action).

An item that passed every rule at submit but failed later (its payer could not
fund it, or a limit refused it at acceptance) can be paid again once its batch
has finished. The retry reserves the item's funds itself, under a key of its
own: the batch's funding key for that payer is already spent, and reusing it
would mark the item funded without moving any money. Then the batch is put back
to FUNDED and the existing processing pays the item (chunk claim, acceptance,
`BatchItem.payment` unique) and settles the batch's status again.
"""

import uuid

from django.db import transaction
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode
from bankapi.models import Program
from bankapi.tasks import task_publish_after_commit
from batches.models import Batch, BatchItem
from batches.rules import PayerBook, item_check
from batches.sent import SentAccount, SentPayee, SentPayer, SentPayment
from payments.services.reserved import Reservation, fee_per_payment, funds_reserve


def _payment_as_sent(item: BatchItem) -> SentPayment:
    """The item's payment as submit took it, to check it against the rules again."""
    payer = item.account
    if payer is None:
        # _refuse_unpayable refuses an item without a payer account before asking for this.
        raise ValueError(f"Batch item {item.id} has no payer account.")
    if payer.sort_code and payer.account_number:
        payer_account = SentAccount(kind="uk", sort_code=payer.sort_code, account_number=payer.account_number)
    else:
        payer_account = SentAccount(kind="iban", iban=payer.iban)
    payee = item.item_payee()
    if payee.iban:
        payee_account = SentAccount(kind="iban", iban=payee.iban, bic=payee.bic or None)
    else:
        payee_account = SentAccount(
            kind="uk", sort_code=payee.sort_code or "", account_number=payee.account_number or ""
        )
    return SentPayment(
        payer=SentPayer(account=payer_account),
        payee=SentPayee(name=payee.name, account=payee_account, payee_type=payee.payee_type),
        amount=f"{item.amount}",
        reference=item.reference,
    )


def _refuse_unpayable(item: BatchItem, batch: Batch) -> None:
    if item.account_id is None or item.amount is None:
        raise ApiError(ErrorCode.VALIDATION_ERROR, f"The item was invalid at submit ({item.error}).")
    checked = item_check(item.index, _payment_as_sent(item), PayerBook.of([item.account]))
    if not checked.valid:
        raise ApiError(
            ErrorCode.VALIDATION_ERROR, "The item breaks the batch rules: " + " ".join(checked.reasons)
        )
    payer = item.account
    assert payer is not None  # item.account_id is not None: checked above
    if batch.currency and payer.currency != batch.currency:
        raise ApiError(ErrorCode.VALIDATION_ERROR, f"The payer account is not in {batch.currency}.")


def batch_item_retry(*, item: BatchItem) -> BatchItem:
    """Reserve a FAILED item's funds again and queue it to be paid by the batch's
    processing; refuse (INVALID_STATE) while the batch is still running, for an
    item not FAILED or already paid, and (VALIDATION_ERROR) for an item that
    breaks the batch rules. A payer that still cannot cover it leaves the item
    FAILED with the new reason."""
    from batches.tasks import process_batch

    with transaction.atomic():
        # The batch row first, as processing locks it: a retry cannot interleave
        # with a run finishing the batch.
        batch = Batch.objects.select_for_update().get(id=item.batch_id)
        locked = BatchItem.objects.select_for_update().get(id=item.id)
        if batch.status not in Batch.FINAL:
            raise ApiError(ErrorCode.INVALID_STATE, "The batch is still being processed; retry once it ends.")
        if locked.status != BatchItem.Status.FAILED or locked.payment_id is not None:
            raise ApiError(ErrorCode.INVALID_STATE, f"A {locked.status} item cannot be retried.")
        _refuse_unpayable(locked, batch)
        # _refuse_unpayable refused an item without a payer account or an amount.
        assert locked.amount is not None and locked.account_id is not None
        program = Program.objects.get(id=batch.program_id)
        amount = locked.amount + fee_per_payment(program)
        outcome = funds_reserve(
            program=program,
            sandbox=batch.sandbox,
            reservations=[
                Reservation(
                    account_id=locked.account_id,
                    amount=amount,
                    key=f"batch-retry:{locked.id}:{uuid.uuid4().hex}",
                )
            ],
            memo=f"Batch {batch.id} item {locked.index} retry",
        )
        refusal = outcome[locked.account_id]
        now = timezone.now()
        if refusal is not None:
            locked.error, locked.updated_at = refusal, now
            locked.save(update_fields=["error", "updated_at"])
            return locked
        locked.status, locked.error, locked.reserved_amount, locked.updated_at = (
            BatchItem.Status.QUEUED,
            "",
            amount,
            now,
        )
        locked.save(update_fields=["status", "error", "reserved_amount", "updated_at"])
        batch.status = Batch.Status.FUNDED
        batch.save(update_fields=["status", "updated_at"])
        task_publish_after_commit(process_batch, str(batch.id))
    return locked
