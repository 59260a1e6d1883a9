"""Due schedules run in sets: a chunk costs the same statements for a few
schedules or many, each run still decided on its account as the runs before
it left it, refused runs recorded, and an unexpected error sends the chunk to
the one-by-one runner with nothing of the set's written."""

from datetime import date
from decimal import Decimal
from unittest import mock

from django.db import connection
from django.test.utils import CaptureQueriesContext

from bankapi.models import Account
from events.models import Event
from payments.models import LedgerTransaction, PaymentRequest, ScheduleRun
from payments.services.schedules import scheduled_payments_run
from tests.payments.test_schedule_runs import DAY, make_schedule, runs_of
from tests.support.factories import funded_account


def statements_to_run(customer, schedules: int) -> int:
    accounts = [funded_account(customer, "1000.00") for _ in range(2)]
    for n in range(schedules):
        make_schedule(accounts[n % 2], frequency="WEEKLY")
    with CaptureQueriesContext(connection) as captured:
        summary = scheduled_payments_run(DAY)
    assert summary.paid == schedules
    return len(captured)


def test_forty_schedules_cost_the_same_statements_as_four(customer):
    statements_to_run(customer, 2)  # the first run also looks the program's system accounts up

    few, many = statements_to_run(customer, 4), statements_to_run(customer, 40)

    if connection.vendor == "postgresql":
        assert many == few
    else:
        # SQLite splits an INSERT of many rows at its parameter limit: a step or two, not one a schedule.
        assert many - few <= 3


def test_runs_of_one_account_are_decided_in_turn_and_a_short_one_is_recorded_failed(customer):
    account = funded_account(customer, "7.00")
    first, second, third = (make_schedule(account, amount=amount) for amount in ("3.00", "3.00", "3.00"))

    summary = scheduled_payments_run(DAY)

    assert (summary.paid, len(summary.failed)) == (2, 1)
    outcomes = sorted(runs_of(s)[0][1] for s in (first, second, third))
    assert outcomes == ["FAILED", "PAID", "PAID"]
    failed = next(run for s in (first, second, third) for run in runs_of(s) if run[1] == "FAILED")
    assert failed[2].startswith("INSUFFICIENT_FUNDS: ")
    assert Account.objects.get(id=account.id).balance == Decimal("1.00")
    assert PaymentRequest.objects.filter(account=account).count() == 2
    assert Event.objects.filter(type="scheduled_payment.run_failed").count() == 1
    assert Event.objects.filter(type="scheduled_payment.run_succeeded").count() == 2
    assert Event.objects.filter(type="payment_request.accepted").count() == 2


def test_missed_dates_are_each_run_once(customer):
    account = funded_account(customer, "100.00")
    weekly = make_schedule(account, frequency="WEEKLY")

    scheduled_payments_run(date(2026, 3, 24))

    assert [run[0] for run in runs_of(weekly)] == [DAY, date(2026, 3, 17), date(2026, 3, 24)]
    assert Account.objects.get(id=account.id).balance == Decimal("91.00")


def test_an_unexpected_error_in_the_set_leaves_the_chunk_to_the_one_by_one_runner(customer):
    account = funded_account(customer, "100.00")
    schedules = [make_schedule(account) for _ in range(3)]

    with mock.patch(
        "payments.services.schedule_sets.works_write_bulk", side_effect=RuntimeError("the bulk writer broke")
    ):
        summary = scheduled_payments_run(DAY)

    assert summary.paid == 3
    assert [runs_of(s)[0][1] for s in schedules] == ["PAID"] * 3
    assert LedgerTransaction.objects.filter(kind="PAYMENT").count() == 3
    assert ScheduleRun.objects.count() == 3
