"""Running a held request once its last approval comes, as if it were sent then.

It goes through the public services its route calls (the payment create's
`payment_instruction_build` and `payment_submit`, batch submit's item checks
and `batch_create`), so every money rule (funds, the per-payment and daily
limits, the payee) is decided again by the same code. A refusal leaves nothing
moved: its work rolls back to a savepoint and the approval records FAILED with
the refusal's code.

Before anything runs, its initiator must still be an active user of the
customer or custodian whose policy held it: one deactivated (or moved out of
it) since sending the request could no longer send it, so it fails
UNAUTHORIZED and nothing moves, however many approvals it gathered.
"""

from typing import Any

from django.db import transaction

from approvals.models import Approval
from authn.models import User
from bankapi.errors import ApiError, ErrorCode
from bankapi.ops.metrics import PAYMENTS
from batches.approval_content import batch_content, batch_from_replay
from batches.services.creation import batch_create
from payments.approval_content import payee_content, payment_from_replay
from payments.models import PaymentRequest
from payments.services.create import payment_submit

CHANGED = "What was approved has changed since (its payee or payer); send a new request."
INITIATOR_GONE = (
    "Whoever sent this request is no longer an active user of its customer or custodian; nothing was paid."
)


def _changed() -> ApiError:
    return ApiError(ErrorCode.INVALID_STATE, CHANGED)


def _initiator_still_acts(approval: Approval) -> bool:
    """Whether the initiator, read now, is an active user of the approval's owner:
    its customer, or for a custodian's approval the custodian or one of its customers."""
    initiator = (
        User.objects.filter(pk=approval.initiator_id)
        .values("is_active", "program_id", "sandbox", "customer_id", "custodian_id", "customer__custodian_id")
        .first()
    )
    if initiator is None or not initiator["is_active"]:
        return False
    if (initiator["program_id"], initiator["sandbox"]) != (approval.program_id, approval.sandbox):
        return False
    if approval.custodian_id is not None:
        return approval.custodian_id in (initiator["custodian_id"], initiator["customer__custodian_id"])
    return initiator["customer_id"] is not None and initiator["customer_id"] == approval.customer_id


def _run_payment(approval: Approval) -> dict[str, Any]:
    account, instruction, scheduled_date, frequency = payment_from_replay(approval.replay)
    if payee_content(instruction.payee) != approval.content["payee"]:
        raise _changed()
    submission = payment_submit(
        account=account, instruction=instruction, scheduled_date=scheduled_date, frequency=frequency
    )
    result: dict[str, Any] = {}
    made = submission.payment_request
    if made is not None:
        result["requestId"] = str(made.id)
        outcome = "held" if made.status == PaymentRequest.Status.PENDING_TM else "accepted"
        transaction.on_commit(lambda: PAYMENTS.labels(outcome=outcome).inc())
    if submission.schedule is not None:
        result["scheduleId"] = str(submission.schedule.id)
    return result


def _run_batch(approval: Approval) -> dict[str, Any]:
    actor, checked, currency, draft = batch_from_replay(
        approval.replay,
        program_id=approval.program_id,
        sandbox=approval.sandbox,
        user_id=approval.initiator_id,
    )
    if batch_content(checked, currency) != approval.content:
        raise _changed()
    batch = batch_create(
        actor=actor, user=approval.initiator, checked=checked, currency=currency, draft=draft
    )
    return {"batchId": str(batch.id)}


def approval_run(approval: Approval) -> None:
    """Run the request of `approval` (locked by the caller, in its transaction) and
    record EXECUTED with what it made, or FAILED with the refusal (nothing moved)."""
    run = _run_batch if approval.kind == Approval.Kind.BATCH else _run_payment
    try:
        if not _initiator_still_acts(approval):
            raise ApiError(ErrorCode.UNAUTHORIZED, INITIATOR_GONE)
        with transaction.atomic():
            approval.result = run(approval)
    except ApiError as error:
        approval.status = Approval.Status.FAILED
        approval.error_code, approval.error_message = str(error.code), error.message
        if approval.kind != Approval.Kind.BATCH:
            transaction.on_commit(lambda: PAYMENTS.labels(outcome="refused").inc())
    else:
        approval.status = Approval.Status.EXECUTED
