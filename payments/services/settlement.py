"""After acceptance: settlement, failure (reversal) and compliance review.

Every state change locks the request row first and re-checks its state, so a
settle and a fail racing on one request (a worker and an operator, two workers)
serialise and the loser sees the new state: 409 INVALID_STATE. The ledger
movements are keyed per request as well, so even a path that skipped the lock
could not post a settlement or a reversal twice.
"""

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from bankapi.clock import clock_now, customer_now
from bankapi.errors import ApiError, ErrorCode
from bankapi.models import Customer
from events.models import EventType
from payments.events import payment_request_event, payment_request_events
from payments.ledger import (
    Leg,
    Movement,
    RequestRef,
    Settled,
    ledger_post_many,
    ledger_post_once,
    statement_entries_settled,
    system_account_for,
)
from payments.models import LedgerTransaction, PaymentRequest, SystemAccount
from payments.services.limits import daily_outbound_give_back

logger = logging.getLogger(__name__)


def locked_request(request: PaymentRequest, allowed: Iterable[str], action: str) -> PaymentRequest:
    """The request, row-locked, if its status is one of `allowed`; else 409."""
    locked = PaymentRequest.objects.select_for_update().get(id=request.id)
    if locked.status not in allowed:
        raise ApiError(ErrorCode.INVALID_STATE, f"A {locked.status} payment request cannot be {action}.")
    return locked


def _settle_locked(requests: list[PaymentRequest], account_currency: dict, now: datetime) -> None:
    """Settle PENDING requests the caller holds row locks on, in a handful of
    statements whatever their number: the movements (clearing -> external, one
    per request, keyed `settle:<id>`) and their postings by the ledger's bulk
    writer, the statement entries in one INSERT, the statuses in one UPDATE and
    the events in one INSERT.

    Each request keeps a movement, postings and statement entries of its own
    (what the statement and the reconciliation trace a payment by). The system
    accounts are the only accounts a settlement moves, and they keep no stored
    balance: the chunk locks no account row. A request whose movement exists
    already (its key is taken: it was settled once and its status not written,
    which the request's row lock makes impossible today) is marked settled
    without a second movement.
    """
    if not requests:
        return
    done = set(
        LedgerTransaction.objects.filter(key__in=[f"settle:{r.id}" for r in requests]).values_list(
            "key", flat=True
        )
    )
    moments = _settle_moments(requests, now)
    by_tenant: dict[tuple, list[PaymentRequest]] = defaultdict(list)
    for request in requests:
        if f"settle:{request.id}" not in done:
            key = (request.program_id, request.sandbox, request.currency, moments[request.id])
            by_tenant[key].append(request)
    settled: list[Settled] = []
    for (program_id, sandbox, currency, moment), group in by_tenant.items():
        clearing, external = (
            system_account_for(program_id, sandbox, kind, currency)
            for kind in (SystemAccount.Kind.CLEARING, SystemAccount.Kind.EXTERNAL)
        )
        entries = ledger_post_many(
            program_id=program_id,
            sandbox=sandbox,
            locked={},
            now=moment,
            movements=[
                Movement(
                    kind=LedgerTransaction.Kind.SETTLEMENT,
                    key=f"settle:{request.id}",
                    memo=request.reference,
                    legs=[
                        Leg(amount=-request.amount, currency=currency, system_account=clearing),
                        Leg(amount=request.amount, currency=currency, system_account=external),
                    ],
                )
                for request in group
            ],
        )
        settled.extend(
            Settled(request=request, entry=entry, account_currency=account_currency[request.account_id])
            for request, entry in zip(group, entries, strict=True)
        )
    statement_entries_settled(settled)
    by_moment: dict[datetime, list[PaymentRequest]] = defaultdict(list)
    for request in requests:
        by_moment[moments[request.id]].append(request)
    for moment, group in by_moment.items():
        PaymentRequest.objects.filter(id__in=[r.id for r in group]).update(
            status=PaymentRequest.Status.SETTLED, settled_at=moment, updated_at=moment
        )
        for request in group:
            request.status, request.settled_at, request.updated_at = (
                PaymentRequest.Status.SETTLED,
                moment,
                moment,
            )
    payment_request_events(requests, EventType.PAYMENT_REQUEST_SETTLED)


def _settle_moments(requests: list[PaymentRequest], now: datetime) -> dict[uuid.UUID, datetime]:
    """When each request settles in its customer's time: `now`, but a sandbox
    customer's on a test clock at its clock's time (its movement, statement
    lines, `settled_at`, `updated_at` and event alike). One query for a chunk
    holding sandbox requests; none for production ones."""
    sandboxed = {request.customer_id for request in requests if request.sandbox}
    clocks = dict(
        Customer.objects.filter(id__in=sandboxed, test_clock__isnull=False).values_list("id", "test_clock_id")
        if sandboxed
        else []
    )
    return {
        request.id: clock_now(clocks[request.customer_id]) if request.customer_id in clocks else now
        for request in requests
    }


def payment_settle(request: PaymentRequest) -> PaymentRequest:
    """PENDING -> SETTLED: the money leaves clearing for the outside world and the
    payment is booked on the account's statement (one request of `_settle_locked`)."""
    with transaction.atomic():
        locked = locked_request(request, [PaymentRequest.Status.PENDING], "settled")
        _settle_locked(
            [locked], {locked.account_id: locked.account.currency}, customer_now(locked.customer_id)
        )
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


def payments_settle_chunk(
    *, sandbox: bool | None = None, created_until: datetime | None = None, chunk_size: int | None = None
) -> int:
    """Claim up to `chunk_size` PENDING requests (of one environment, or both when
    None; created at or before `created_until` when given), oldest first, and
    settle them in one transaction; returns how many settled.

    The claim locks the requests with SKIP LOCKED: workers running this at once
    take different chunks instead of queueing behind each other, and a request
    another transaction holds (being failed, say) is left for the next claim.
    It reads the partial index of PENDING requests, whose size is the backlog,
    not the history.
    """
    with transaction.atomic():
        claimed = PaymentRequest.objects.select_for_update(skip_locked=True, of=("self",)).filter(
            status=PaymentRequest.Status.PENDING
        )
        if sandbox is not None:
            claimed = claimed.filter(sandbox=sandbox)
        if created_until is not None:
            due = Q(created_at__lte=created_until)
            if sandbox is not False:
                # A test clock's customer's requests carry its clock's time, which
                # says nothing of when they were made: all of them are due.
                due |= Q(sandbox=True, customer__test_clock__isnull=False)
            claimed = claimed.filter(due)
        size = chunk_size or settings.SETTLEMENT_CHUNK
        chunk = list(claimed.select_related("account").order_by("created_at", "id")[:size])
        _settle_locked(chunk, {r.account_id: r.account.currency for r in chunk}, timezone.now())
    return len(chunk)


def payments_pending_beyond_a_chunk(created_until: datetime) -> bool:
    """Whether more than one chunk of production requests created at or before
    `created_until` waits to settle (one read of the partial index)."""
    pending = PaymentRequest.objects.filter(
        status=PaymentRequest.Status.PENDING, sandbox=False, created_at__lte=created_until
    )
    chunk = settings.SETTLEMENT_CHUNK
    return pending.order_by()[chunk : chunk + 1].exists()


def payments_settle_oldest_pending_seconds() -> float:
    """Settlement's lag: how long the oldest PENDING production request has
    waited, in seconds (0 when none waits)."""
    oldest = (
        PaymentRequest.objects.filter(status=PaymentRequest.Status.PENDING, sandbox=False)
        .order_by("created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    return max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0


def payments_settle_pending(
    *,
    sandbox: bool | None = None,
    created_until: datetime | None = None,
    chunk_size: int | None = None,
    heartbeat: Callable[[], None] | None = None,
) -> int:
    """Settle the PENDING requests there are now (created at or before
    `created_until`, default: this call's start), chunk by chunk
    (`payments_settle_chunk`, a transaction each); returns how many settled.

    Bounded to what was due when it started: under load it does not chase
    new arrivals (the next run takes them). `heartbeat` is called after each
    chunk (a periodic run's lease). Several callers at once split the work.
    """
    until = created_until or timezone.now()
    chunk_size = chunk_size or settings.SETTLEMENT_CHUNK
    settled = 0
    while True:
        count = payments_settle_chunk(sandbox=sandbox, created_until=until, chunk_size=chunk_size)
        settled += count
        if heartbeat is not None and count:
            heartbeat()
        if count < chunk_size:
            logger.info("Settled %s payment requests", settled)
            return settled
