"""After acceptance: settlement, failure (reversal) and compliance review.

Every state change locks the request row first and re-checks its state, so a
settle and a fail racing on one request (a worker and an operator, two workers)
serialise and the loser sees the new state: 409 INVALID_STATE. The ledger
movements are keyed per request as well, so even a path that skipped the lock
could not post a settlement or a reversal twice.
"""

import logging
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode
from events.models import EventType
from payments.events import payment_request_event
from payments.ledger import Leg, RequestRef, ledger_post_once, system_account_for
from payments.models import LedgerTransaction, PaymentRequest, StatementEntry, SystemAccount
from payments.services.limits import daily_outbound_give_back

logger = logging.getLogger(__name__)

SETTLE_CHUNK = 100
FEE_REFERENCE = "Payment fee"


def locked_request(request: PaymentRequest, allowed: Iterable[str], action: str) -> PaymentRequest:
    """The request, row-locked, if its status is one of `allowed`; else 409."""
    locked = PaymentRequest.objects.select_for_update().get(id=request.id)
    if locked.status not in allowed:
        raise ApiError(ErrorCode.INVALID_STATE, f"A {locked.status} payment request cannot be {action}.")
    return locked


def _book(request: PaymentRequest, entry: LedgerTransaction) -> None:
    """Book the settled payment (and its fee) on the account's statement."""
    lines = [(request.debit_amount, request.reference)]
    if request.fee:
        lines.append((request.fee, FEE_REFERENCE))
    StatementEntry.objects.bulk_create(
        StatementEntry(
            program_id=request.program_id,
            sandbox=request.sandbox,
            account_id=request.account_id,
            ledger_transaction=entry,
            payment_request=request,
            direction=StatementEntry.Direction.DEBIT,
            amount=amount,
            currency=request.account.currency,
            reference=reference,
        )
        for amount, reference in lines
    )


def payment_settle(request: PaymentRequest) -> PaymentRequest:
    """PENDING -> SETTLED: the money leaves clearing for the outside world and the
    payment is booked on the account's statement."""
    with transaction.atomic():
        locked = locked_request(request, [PaymentRequest.Status.PENDING], "settled")
        clearing, external = (
            system_account_for(locked.program_id, locked.sandbox, kind, locked.currency)
            for kind in (SystemAccount.Kind.CLEARING, SystemAccount.Kind.EXTERNAL)
        )
        entry = ledger_post_once(
            program_id=locked.program_id,
            sandbox=locked.sandbox,
            kind=LedgerTransaction.Kind.SETTLEMENT,
            key=f"settle:{locked.id}",
            memo=locked.reference,
            legs=[
                Leg(amount=-locked.amount, currency=locked.currency, system_account=clearing),
                Leg(amount=locked.amount, currency=locked.currency, system_account=external),
            ],
        )
        if entry is not None:
            _book(locked, entry)
        locked.status = PaymentRequest.Status.SETTLED
        locked.settled_at = timezone.now()
        locked.save(update_fields=["status", "settled_at", "updated_at"])
        payment_request_event(locked, EventType.PAYMENT_REQUEST_SETTLED)
        return locked


def payment_fail(request: PaymentRequest, reason: str) -> PaymentRequest:
    """PENDING or PENDING_TM -> FAILED: every acceptance posting is reversed, so the
    account gets back the amount and the fee. The request stays listed as FAILED."""
    with transaction.atomic():
        locked = locked_request(
            request, [PaymentRequest.Status.PENDING, PaymentRequest.Status.PENDING_TM], "failed"
        )
        postings = locked.acceptance.postings.select_related("account", "system_account")
        reversal = ledger_post_once(
            program_id=locked.program_id,
            sandbox=locked.sandbox,
            kind=LedgerTransaction.Kind.REVERSAL,
            key=f"reverse:{locked.id}",
            memo=reason,
            request=RequestRef(id=locked.id, reference=locked.reference),
            legs=[
                Leg(
                    amount=-posting.amount,
                    currency=posting.currency,
                    account=posting.account,
                    system_account=posting.system_account,
                )
                for posting in postings
            ],
        )
        update_fields = ["status", "failure_reason", "updated_at"]
        if reversal is not None:
            # Under the account's lock, taken by the reversal.
            daily_outbound_give_back(locked)
            # Names the request on the account's statement, beside its acceptance.
            locked.reversal = reversal
            update_fields.append("reversal")
        locked.status = PaymentRequest.Status.FAILED
        locked.failure_reason = reason[:200]
        locked.save(update_fields=update_fields)
        payment_request_event(locked, EventType.PAYMENT_REQUEST_FAILED)
        return locked


def payment_review_approve(request: PaymentRequest) -> PaymentRequest:
    """Compliance released a held payment: PENDING_TM -> PENDING (it can settle)."""
    with transaction.atomic():
        locked = locked_request(request, [PaymentRequest.Status.PENDING_TM], "approved")
        locked.status = PaymentRequest.Status.PENDING
        locked.save(update_fields=["status", "updated_at"])
        payment_request_event(locked, EventType.PAYMENT_REQUEST_APPROVED)
        return locked


def payment_review_reject(request: PaymentRequest, reason: str) -> PaymentRequest:
    """Compliance refused a held payment: PENDING_TM -> FAILED, funds returned."""
    with transaction.atomic():
        locked_request(request, [PaymentRequest.Status.PENDING_TM], "rejected")
        return payment_fail(request, reason)


def payments_settle_pending(*, sandbox: bool | None = None, chunk_size: int = SETTLE_CHUNK) -> int:
    """Settle every PENDING request (of one environment, or both when None), in
    chunks of one transaction each; returns how many settled.

    Rows are claimed with SKIP LOCKED, so two workers running this at once split
    the work instead of queueing behind each other; a row another transaction
    holds (being failed, say) is left for the next run.
    """
    settled = 0
    while True:
        with transaction.atomic():
            claimed = PaymentRequest.objects.select_for_update(skip_locked=True).filter(
                status=PaymentRequest.Status.PENDING
            )
            if sandbox is not None:
                claimed = claimed.filter(sandbox=sandbox)
            chunk = list(claimed.order_by("created_at", "id")[:chunk_size])
            for request in chunk:
                payment_settle(request)
            settled += len(chunk)
        if len(chunk) < chunk_size:
            logger.info("Settled %s payment requests", settled)
            return settled
