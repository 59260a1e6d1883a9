"""Settlement as deployed: real Celery workers against PostgreSQL and Redis
(skipped without them). Two workers split a backlog with nothing settled twice,
and a run whose worker is killed mid-way is taken over by another worker once
its lease expires, within 90 seconds of the death."""

import signal
import time
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from bankapi.models import Customer, PeriodicLease
from config.celery import app
from events.models import Event
from payments.models import LedgerTransaction, PaymentRequest, StatementEntry
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import payments_settle_oldest_pending_seconds
from tests.conftest import requires_redis
from tests.support.factories import ProgramFactory, funded_account
from tests.support.worker import celery_workers

ENTRY = "settle-pending-payments"


def backlog(count: int) -> list[PaymentRequest]:
    customer = Customer.objects.create(program=ProgramFactory(), sandbox=False, name="Live")
    accounts = [funded_account(customer, "100000.00") for _ in range(4)]
    return [
        payment_accept(
            account=accounts[n % 4],
            instruction=PaymentInstruction(amount=Decimal("1.00"), currency="GBP", reference=f"Backlog {n}"),
        )
        for n in range(count)
    ]


def beat_tick(queue: str) -> None:
    """What beat sends on each tick of the settlement entry."""
    spec = settings.CELERY_BEAT_SCHEDULE[ENTRY]
    app.send_task(spec["task"], queue=queue)


def settled() -> int:
    return PaymentRequest.objects.filter(status="SETTLED").count()


def wait_until(condition, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def settled_once_each(requests: list[PaymentRequest]) -> None:
    ids = [r.id for r in requests]
    assert PaymentRequest.objects.filter(id__in=ids, status="SETTLED").count() == len(ids)
    assert LedgerTransaction.objects.filter(kind="SETTLEMENT").count() == len(ids)
    assert StatementEntry.objects.filter(payment_request_id__in=ids).count() == len(ids)
    assert Event.objects.filter(type="payment_request.settled").count() == len(ids)


def counts_logged(log: Path) -> list[int]:
    return [
        int(line.split("Settled ")[1].split()[0])
        for line in log.read_text().splitlines()
        if "Settled " in line
    ]


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_two_workers_split_a_settlement_backlog_and_settle_each_payment_once(transactional_db, tmp_path):
    requests = backlog(1000)
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    with celery_workers("settle-split", {"SETTLEMENT_CHUNK": "25", "SETTLEMENT_HELPERS": "1"}) as workers:
        for log in logs:
            workers.start(output=log.open("w"))
        time.sleep(3)  # both ready: a task sent now may go to either

        beat_tick(workers.queue)

        assert wait_until(lambda: settled() == len(requests), timeout=120)
    settled_once_each(requests)
    # The run settled on one worker and its helper on the other.
    assert all(sum(counts_logged(log)) > 0 for log in logs), [log.read_text()[-2000:] for log in logs]
    assert sum(sum(counts_logged(log)) for log in logs) == len(requests)
    assert payments_settle_oldest_pending_seconds() == 0
    assert PeriodicLease.objects.get(name=ENTRY).last_success_at is not None


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_is_killed_is_taken_over_within_90_seconds(transactional_db, tmp_path):
    requests = backlog(1000)
    env = {"SETTLEMENT_CHUNK": "10", "SETTLEMENT_HELPERS": "0"}
    with celery_workers("settle-kill", env) as workers:
        doomed = workers.start(output=(tmp_path / "doomed.log").open("w"))
        beat_tick(workers.queue)
        assert wait_until(lambda: settled() >= 50, timeout=60)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        died = time.monotonic()
        left = len(requests) - settled()
        assert left > 0, "the run ended before the kill: make the backlog larger"

        workers.start(output=(tmp_path / "survivor.log").open("w"))
        # Beat keeps ticking; ticks before the dead run's lease expires do nothing.
        while settled() < len(requests) and time.monotonic() - died < 120:
            beat_tick(workers.queue)
            wait_until(lambda: settled() == len(requests), timeout=5)
        taken_over = time.monotonic() - died

    settled_once_each(requests)
    assert taken_over < 90, f"the rest ({left}) settled {taken_over:.0f} s after the death"
    lease = PeriodicLease.objects.get(name=ENTRY)
    assert lease.holder is None and lease.last_success_at > timezone.now() - timezone.timedelta(seconds=90)
    assert "Traceback" not in (tmp_path / "survivor.log").read_text()
