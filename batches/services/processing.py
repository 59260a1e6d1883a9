"""A submitted batch: created with its items, then funded and paid by Celery.

Lifecycle: CREATED -> FUNDING_PENDING -> FUNDED (or FUNDING_FAILED) -> QUEUED
-> PROCESSING -> COMPLETED, PARTIALLY_FAILED or FAILED. Items: QUEUED ->
PROCESSING -> SUCCESS or FAILED; an item invalid at submit is FAILED at once.

Safe to rerun after a crash at any point, and to run twice at once:
- Funding takes the batch row lock, holds each item's amount and fee on its
  payer's account (all of a payer's items or none) and links each item to its
  hold in the same transaction: a crash rolls both back, and an item with a
  hold is never funded again (the item's first hold takes the item's id). A
  hold is not a booking: no statement shows it, and each paid item is one
  debit of its own.
- Items are claimed in chunks (QUEUED -> PROCESSING, committed), then paid in
  one transaction per chunk that locks the items (SKIP LOCKED: another runner's
  chunk is left to it) and re-checks that each has no payment yet. The payment
  requests and the items' outcomes commit together, and `BatchItem.payment` is
  unique: an item is paid at most once. A chunk cut off by a crash stays
  PROCESSING without payment and is paid by the next run.
"""

import logging
import uuid
from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet
from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.models import Program
from bankapi.ops.metrics import BATCH_ITEMS
from batches.events import batch_event
from batches.models import Batch, BatchItem
from payments.decision import Refused, payment_needs
from payments.ledger import HoldOrder
from payments.services.held import HeldPayment, fee_per_payment, funds_hold, payments_accept_held

logger = logging.getLogger(__name__)

# Payer accounts funded per transaction (each locked once, in id order).
PAYER_GROUP = 200
Status = Batch.Status
ItemStatus = BatchItem.Status


def outcomes_count(*, success: int = 0, failed: int = 0) -> None:
    """Counts items reaching an outcome, once the transaction that set it commits.
    Each item is counted when it is created failed, refused funding, paid or
    refused payment; an item retried later counts again with its new outcome."""

    def count() -> None:
        if success:
            BATCH_ITEMS.labels(outcome="success").inc(success)
        if failed:
            BATCH_ITEMS.labels(outcome="failed").inc(failed)

    transaction.on_commit(count)


def batch_process(batch_id: str, *, chunk_size: int | None = None) -> None:
    """Fund the batch, pay its items chunk by chunk, then settle its status."""
    chunk_size = chunk_size or settings.BATCH_CHUNK_SIZE
    batch_fund(batch_id)
    while batch_process_chunk(batch_id, chunk_size=chunk_size):
        pass
    batch_finish(batch_id)


def batch_fund(batch_id: str) -> None:
    """Hold, per payer account, each of its items' amount and fee when the
    account's available balance covers their total; a payer that cannot cover
    its total fails its own items."""
    owner = Batch.objects.filter(id=batch_id).values_list("owner_customer_id", flat=True).first()
    Batch.objects.filter(id=batch_id, status=Status.CREATED).update(
        status=Status.FUNDING_PENDING, **_moved(owner)
    )
    while True:
        with transaction.atomic():
            # Two runners fund one after the other; the second finds nothing left.
            batch = Batch.objects.select_for_update().filter(id=batch_id).first()
            if batch is None or batch.status != Status.FUNDING_PENDING:
                return
            program = Program.objects.get(id=batch.program_id)
            fee = fee_per_payment(program)
            unfunded = BatchItem.objects.filter(batch=batch, status=ItemStatus.QUEUED, hold__isnull=True)
            payers = list(
                unfunded.values_list("account_id", flat=True).order_by("account_id").distinct()[:PAYER_GROUP]
            )
            if not payers:
                _funding_settled(batch)
                return
            outcome = funds_hold(_hold_orders(batch, unfunded.filter(account_id__in=payers), fee))
            funded = [account_id for account_id, refusal in outcome.items() if refusal is None]
            moved = _moved(batch.owner_customer_id)
            unfunded.filter(account_id__in=funded).update(hold_id=F("id"), updated_at=moved["updated_at"])
            # The heartbeat of a long funding: the stall sweep leaves a batch alone while it moves.
            Batch.objects.filter(id=batch.id).update(**moved)
            for account_id, refusal in outcome.items():
                if refusal is not None:
                    refused_count = unfunded.filter(account_id=account_id).update(
                        status=ItemStatus.FAILED, updated_at=moved["updated_at"], **item_failure(refusal)
                    )
                    outcomes_count(failed=refused_count)


def _hold_orders(batch: Batch, items: QuerySet[BatchItem], fee: Decimal) -> list[HoldOrder]:
    """One hold per item, of what its payment needs (`payments.decision.payment_needs`:
    its amount and fee). An item's first hold takes the item's id, so funding
    links them all in one UPDATE."""
    orders = []
    for item_id, account_id, amount, index in items.values_list("id", "account_id", "amount", "index"):
        # Only valid items are QUEUED, and a valid item has a payer and an amount.
        if account_id is None or amount is None:
            raise ValueError(f"Batch item {item_id} is queued without a payer or an amount.")
        orders.append(
            HoldOrder(
                id=item_id,
                account_id=account_id,
                amount=payment_needs(amount, fee),
                memo=f"Batch {batch.id} item {index}",
            )
        )
    return orders


def _funding_settled(batch: Batch) -> None:
    if BatchItem.objects.filter(batch=batch, hold__isnull=False).exists():
        batch.status = Status.FUNDED
    elif batch.valid_count:
        batch.status = Status.FUNDING_FAILED
    else:
        batch.status = Status.FAILED
    batch.save(update_fields=["status", "updated_at", "progressed_at"])
    batch_event(batch)
    logger.info("Batch %s funding: %s", batch.id, batch.status)


def batch_process_chunk(batch_id: str, *, chunk_size: int) -> bool:
    """Claim and pay one chunk of items; False once there is nothing left to do here."""
    owner = Batch.objects.filter(id=batch_id).values_list("owner_customer_id", flat=True).first()
    moved = _moved(owner)
    now = moved["updated_at"]
    Batch.objects.filter(id=batch_id, status=Status.FUNDED).update(status=Status.QUEUED, **moved)
    Batch.objects.filter(id=batch_id, status=Status.QUEUED).update(status=Status.PROCESSING, **moved)
    batch = Batch.objects.filter(id=batch_id, status=Status.PROCESSING).first()
    if batch is None:
        return False
    with transaction.atomic():
        claimed = list(
            BatchItem.objects.select_for_update(skip_locked=True)
            .filter(batch=batch, status=ItemStatus.QUEUED, hold__isnull=False)
            .order_by("index")
            .values_list("id", flat=True)[:chunk_size]
        )
        BatchItem.objects.filter(id__in=claimed).update(status=ItemStatus.PROCESSING, updated_at=now)
    with transaction.atomic():
        # Our claimed chunk, or one a crashed run left PROCESSING; items another
        # runner is paying right now are locked and skipped.
        items = list(
            BatchItem.objects.select_for_update(skip_locked=True)
            .filter(batch=batch, status=ItemStatus.PROCESSING, payment__isnull=True)
            .order_by("index")[:chunk_size]
        )
        if not items:
            return bool(claimed)
        program = Program.objects.get(id=batch.program_id)
        outcomes = payments_accept_held(
            program=program, sandbox=batch.sandbox, payments=[_held_payment(item) for item in items]
        )
        moved = _moved(batch.owner_customer_id)
        now = moved["updated_at"]
        paid, refused = [], defaultdict(list)
        for item, outcome in zip(items, outcomes, strict=True):
            if isinstance(outcome, Refused):
                refused[outcome].append(item.id)
            else:
                paid.append(item.id)
        BatchItem.objects.filter(id__in=paid).update(
            status=ItemStatus.SUCCESS, payment_id=F("id"), updated_at=now
        )
        for refusal, item_ids in refused.items():
            BatchItem.objects.filter(id__in=item_ids).update(
                status=ItemStatus.FAILED, updated_at=now, **item_failure(refusal)
            )
        outcomes_count(success=len(paid), failed=sum(len(item_ids) for item_ids in refused.values()))
        Batch.objects.filter(id=batch.id).update(**moved)
    return True


def batch_finish(batch_id: str) -> None:
    """PROCESSING -> COMPLETED, PARTIALLY_FAILED or FAILED once no item is left to pay."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update().filter(id=batch_id).first()
        if batch is None or batch.status != Status.PROCESSING:
            return
        counts = BatchItem.objects.filter(batch=batch).aggregate(
            open=Count("id", filter=Q(status__in=[ItemStatus.QUEUED, ItemStatus.PROCESSING])),
            paid=Count("id", filter=Q(status=ItemStatus.SUCCESS)),
            failed=Count("id", filter=Q(status=ItemStatus.FAILED)),
        )
        if counts["open"]:
            return
        if not counts["failed"]:
            batch.status = Status.COMPLETED
        elif not counts["paid"]:
            batch.status = Status.FAILED
        else:
            batch.status = Status.PARTIALLY_FAILED
        batch.save(update_fields=["status", "updated_at", "progressed_at"])
        batch_event(batch)
        logger.info("Batch %s: %s", batch.id, batch.status)


def _moved(owner_customer_id: uuid.UUID | None) -> dict[str, datetime]:
    """The times a batch (and its items) that just moved take: `updated_at` its
    owner's (a test clock's, for its customers), `progressed_at` the real time."""
    return {"updated_at": customer_now(owner_customer_id), "progressed_at": timezone.now()}


def batches_stalled(older_than: timedelta) -> list[str]:
    """Unfinished batches with no progress for a while (a worker died): to run
    again. Real time, whatever clock the batch's owner lives at."""
    cutoff = timezone.now() - older_than
    return [
        str(batch_id)
        for batch_id in Batch.objects.exclude(status__in=Batch.FINAL)
        .filter(progressed_at__lt=cutoff)
        .values_list("id", flat=True)
    ]


def _held_payment(item: BatchItem) -> HeldPayment:
    """The payment of a claimed item. Only items with a hold are claimed, and
    only valid items (with a payer account and an amount) are held."""
    instruction = item.instruction()
    if instruction.account_id is None or item.hold_id is None or instruction.amount is None:
        raise ValueError(f"Batch item {item.id} was claimed without a payer, an amount or a hold.")
    return HeldPayment(
        # The item's payment request takes the item's id: linked in one UPDATE below.
        request_id=item.id,
        account_id=instruction.account_id,
        hold_id=item.hold_id,
        amount=instruction.amount,
        currency=instruction.currency,
        reference=instruction.reference,
        payee=instruction.payee.as_paid(),
    )


def item_failure(refusal: Refused) -> dict[str, str]:
    """The fields of an item a refusal fails (funding, acceptance, or a retry):
    its code, and the error shown (the code, then the refusal's words)."""
    return {"failure_code": refusal.code, "error": f"{refusal.code}: {refusal.message}"}
