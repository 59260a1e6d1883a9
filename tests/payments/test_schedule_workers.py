"""Scheduled payments run by several workers at once, and by a real Celery worker
(PostgreSQL, and Redis for the worker; skipped otherwise)."""

import time
from datetime import date
from decimal import Decimal

import pytest
from django.conf import settings

from config.celery import app
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction
from payments.services.schedules import schedule_create, schedule_run_day, scheduled_payments_run
from tests.conftest import requires_postgres, requires_redis
from tests.support.factories import funded_account
from tests.support.race import run_at_once
from tests.support.worker import celery_workers

DAY = date(2026, 3, 10)
PAYEE = Payee(name="Jane", account=UkAccount(sort_code="200000", account_number="55779911"))


def make_schedule(account, anchor=DAY) -> ScheduledPayment:
    instruction = PaymentInstruction(
        amount=Decimal("1.00"), currency=account.currency, reference="Standing order", payee=PAYEE
    )
    return schedule_create(account=account, instruction=instruction, anchor=anchor, frequency="WEEKLY")


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_runners_at_once_pay_each_schedule_exactly_once(transactional_db, customer):
    accounts = [funded_account(customer, "100.00") for _ in range(6)]
    schedules = [make_schedule(accounts[n % 6]) for n in range(60)]
    summaries = run_at_once(2, lambda _: scheduled_payments_run(DAY, chunk_size=5))

    assert sum(summary.paid for summary in summaries) == 60
    assert ScheduleRun.objects.count() == 60
    for schedule in schedules:
        assert PaymentRequest.objects.filter(schedule=schedule).count() == 1
        assert ScheduledPayment.objects.get(id=schedule.id).next_run_date == date(2026, 3, 17)
    assert (
        sorted(a.balance for a in type(accounts[0]).objects.filter(id__in=[a.id for a in accounts]))
        == [Decimal("90.00")] * 6
    )


@pytest.fixture
def celery_worker():
    """A real worker on a queue of its own, against the test database."""
    with celery_workers("schedules") as workers:
        workers.start()
        yield workers.queue


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_celery_worker_runs_the_beat_task_against_redis(transactional_db, customer, celery_worker):
    account = funded_account(customer, "10.00")
    # The day beat's run pays: today from 02:00 UTC, yesterday before (a run
    # between midnight and 02:00 must not wait for a schedule due today).
    day = schedule_run_day()
    schedule = make_schedule(account, anchor=day)
    entry = settings.CELERY_BEAT_SCHEDULE["run-scheduled-payments"]

    # What beat does at 02:00 UTC: send the task by name, with the entry's arguments.
    app.send_task(
        entry["task"], args=entry.get("args", ()), kwargs=entry.get("kwargs", {}), queue=celery_worker
    )

    deadline = time.monotonic() + 60
    while not ScheduleRun.objects.filter(schedule=schedule).exists() and time.monotonic() < deadline:
        time.sleep(0.25)
    run = ScheduleRun.objects.get(schedule=schedule)
    assert (run.run_date, run.outcome) == (day, "PAID")
    assert PaymentRequest.objects.get(schedule=schedule).amount == Decimal("1.00")
    assert type(account).objects.get(id=account.id).balance == Decimal("9.00")
