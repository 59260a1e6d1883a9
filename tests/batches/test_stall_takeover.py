"""A batch whose worker died is taken up again within 90 seconds of the death:
a live batch shows progress (a heartbeat) at every funding group and chunk, the
sweep queues again what has shown none for STALLED_AFTER, and it runs every
minute. The batch taken up pays each item once."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone

from bankapi.models import Account
from batches.models import Batch, BatchItem
from batches.services import processing
from batches.services.processing import batch_fund
from batches.tasks import STALLED_AFTER, resume_stalled_batches
from payments.models import PaymentRequest
from tests.batches.conftest import balance, payment
from tests.batches.helpers import batch_submitted

pytestmark = pytest.mark.django_db

TAKEN_UP_WITHIN = timedelta(seconds=90)


@pytest.fixture
def payers(custodian_accounts) -> list[Account]:
    return [Account.objects.get(id=entry["accountId"]) for entry in custodian_accounts]


def test_the_sweep_period_and_the_stall_threshold_fit_in_90_seconds_with_room_to_run():
    sweep = settings.CELERY_BEAT_SCHEDULE["batches-resume-stalled"]
    assert sweep["task"] == resume_stalled_batches.name
    # The last heartbeat, the threshold, then at most one sweep period; 10 s left to start the run.
    assert STALLED_AFTER + timedelta(seconds=float(sweep["schedule"])) <= TAKEN_UP_WITHIN - timedelta(
        seconds=10
    )


def _left_by_a_dead_worker(batch: Batch, heartbeat_ago: timedelta) -> None:
    """Funded, one chunk claimed (PROCESSING), none paid; the worker died at its last heartbeat."""
    batch_fund(str(batch.id))
    first_two = BatchItem.objects.filter(batch=batch).order_by("index").values_list("id", flat=True)[:2]
    BatchItem.objects.filter(id__in=list(first_two)).update(status="PROCESSING")
    Batch.objects.filter(id=batch.id).update(
        status="PROCESSING", progressed_at=timezone.now() - heartbeat_ago
    )


def test_a_batch_silent_past_the_threshold_is_taken_up_and_pays_each_item_once(custodian_user, payers):
    first, second = payers
    before = balance(first.id), balance(second.id)
    batch = batch_submitted(
        custodian_user, [payment(first, "1.00"), payment(second, "2.00"), payment(first, "3.00")]
    )
    _left_by_a_dead_worker(batch, STALLED_AFTER + timedelta(seconds=1))

    swept = resume_stalled_batches.delay().get()

    assert swept["batches"] == 1
    batch.refresh_from_db()
    assert batch.status == "COMPLETED"
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 3
    assert (balance(first.id), balance(second.id)) == (
        before[0] - Decimal("4.00"),
        before[1] - Decimal("2.00"),
    )
    # Swept again: nothing left to do, nothing paid twice.
    assert resume_stalled_batches.delay().get()["batches"] == 0
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 3


def test_a_batch_between_two_heartbeats_is_left_to_its_worker(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00")])
    _left_by_a_dead_worker(batch, STALLED_AFTER / 2)

    assert resume_stalled_batches.delay().get()["batches"] == 0
    assert Batch.objects.get(id=batch.id).status == "PROCESSING"


def test_funding_beats_the_heart_at_every_group_of_payers(custodian_user, payers, monkeypatch):
    """A long funding (thousands of payers, a group per transaction) is not
    mistaken for a dead worker: each group touches the batch."""
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00"), payment(payers[1], "1.00")])
    monkeypatch.setattr(processing, "PAYER_GROUP", 1)
    seen, hold = [], processing.funds_hold

    def funds_hold_observed(orders):
        seen.append(Batch.objects.get(id=batch.id).progressed_at)
        # As if this group took long: the batch's last sign of life an hour ago.
        Batch.objects.filter(id=batch.id).update(progressed_at=timezone.now() - timedelta(hours=1))
        return hold(orders)

    monkeypatch.setattr(processing, "funds_hold", funds_hold_observed)

    batch_fund(str(batch.id))

    assert len(seen) == 2
    assert timezone.now() - seen[1] < STALLED_AFTER, "the first group left no heartbeat"
    assert timezone.now() - Batch.objects.get(id=batch.id).progressed_at < STALLED_AFTER
