"""Running scheduled payments: the service, the command and the beat task."""

import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.conf import settings
from django.core.management import ManagementUtility, call_command
from django.core.management.base import CommandError

from payments.ledger import ledger_fund_account
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import Payee, UkAccount, payee_of
from payments.services.acceptance import PaymentInstruction
from payments.services.schedules import (
    RunDateInFuture,
    schedule_create,
    scheduled_payments_run,
    utc_today,
)
from payments.tasks import run_scheduled_payments
from tests.payments.conftest import balance, payments_url
from tests.support.factories import funded_account

DAY = date(2026, 3, 10)


def make_schedule(account, anchor=DAY, frequency="NEVER", amount="3.00") -> ScheduledPayment:
    instruction = PaymentInstruction(
        amount=Decimal(amount),
        currency=account.currency,
        reference="Standing order",
        payee=Payee(name="Jane", account=UkAccount(sort_code="200000", account_number="55779911")),
    )
    return schedule_create(account=account, instruction=instruction, anchor=anchor, frequency=frequency)


def runs_of(schedule) -> list[tuple[date, str, str]]:
    return list(
        ScheduleRun.objects.filter(schedule=schedule)
        .order_by("run_date")
        .values_list("run_date", "outcome", "reason")
    )


def test_a_due_one_off_pays_once_and_completes(customer):
    account = funded_account(customer, "10.00")
    schedule = make_schedule(account)

    summary = scheduled_payments_run(DAY)

    schedule.refresh_from_db()
    assert (summary.paid, summary.held, summary.failed) == (1, 0, [])
    assert (schedule.status, schedule.next_run_date) == ("COMPLETED", None)
    request = PaymentRequest.objects.get(schedule=schedule)
    assert (request.status, request.amount, payee_of(request.payee).name) == (
        "PENDING",
        Decimal("3.00"),
        "Jane",
    )
    assert schedule.last_run.payment_request == request
    assert balance(account) == Decimal("7.00")


def test_a_schedule_not_yet_due_is_left_alone(customer):
    account = funded_account(customer, "10.00")
    schedule = make_schedule(account, anchor=date(2026, 3, 11))

    summary = scheduled_payments_run(DAY)

    assert summary.runs == 0
    assert ScheduledPayment.objects.get(id=schedule.id).next_run_date == date(2026, 3, 11)


def test_running_the_same_day_twice_pays_nothing_the_second_time(customer):
    account = funded_account(customer, "100.00")
    schedules = [make_schedule(account, frequency="DAILY") for _ in range(3)]

    first = scheduled_payments_run(DAY)
    second = scheduled_payments_run(DAY)

    assert (first.paid, second.runs) == (3, 0)
    assert PaymentRequest.objects.filter(account=account).count() == 3
    for schedule in schedules:
        assert runs_of(schedule) == [(DAY, "PAID", "")]
    assert balance(account) == Decimal("91.00")


def test_a_run_record_for_the_day_stops_a_second_payment_whatever_the_schedule_says(customer):
    account = funded_account(customer, "100.00")
    schedule = make_schedule(account, frequency="DAILY")
    scheduled_payments_run(DAY)
    # A stale copy of the schedule (a second runner's view) still thinks the day is due.
    ScheduledPayment.objects.filter(id=schedule.id).update(next_run_date=DAY, occurrence=0)

    summary = scheduled_payments_run(DAY)

    assert summary.runs == 0
    assert PaymentRequest.objects.filter(schedule=schedule).count() == 1
    assert ScheduledPayment.objects.get(id=schedule.id).next_run_date == date(2026, 3, 11)


def test_a_failing_run_is_recorded_with_its_reason_and_the_next_one_runs(customer):
    account = funded_account(customer, "5.00")
    schedule = make_schedule(account, frequency="DAILY")

    scheduled_payments_run(DAY)
    failed = scheduled_payments_run(date(2026, 3, 11))
    ledger_fund_account(account, Decimal("10.00"), key="top-up")
    scheduled_payments_run(date(2026, 3, 12))

    assert [reason for _, _, reason in failed.failed] == [runs_of(schedule)[1][2]]
    outcomes = runs_of(schedule)
    assert [(d, o) for d, o, _ in outcomes] == [
        (date(2026, 3, 10), "PAID"),
        (date(2026, 3, 11), "FAILED"),
        (date(2026, 3, 12), "PAID"),
    ]
    assert outcomes[1][2].startswith("INSUFFICIENT_FUNDS")
    assert ScheduledPayment.objects.get(id=schedule.id).status == "ACTIVE"
    assert balance(account) == Decimal("9.00")


def test_a_run_over_the_limit_is_recorded_as_failed(customer):
    account = funded_account(customer, "30000.00")
    schedule = make_schedule(account, amount="25000.01")

    summary = scheduled_payments_run(DAY)

    assert summary.failed[0][2].startswith("LIMIT_EXCEEDED")
    assert ScheduledPayment.objects.get(id=schedule.id).status == "COMPLETED"
    assert balance(account) == Decimal("30000.00")


def test_a_large_run_is_held_for_review(customer):
    account = funded_account(customer, "20000.00")
    schedule = make_schedule(account, amount="10000.00")

    summary = scheduled_payments_run(DAY)

    assert (summary.paid, summary.held) == (0, 1)
    assert runs_of(schedule) == [(DAY, "HELD", "")]
    assert PaymentRequest.objects.get(schedule=schedule).status == "PENDING_TM"


def test_missed_days_are_caught_up_one_payment_per_run_date(customer):
    account = funded_account(customer, "100.00")
    schedule = make_schedule(account, frequency="DAILY")

    scheduled_payments_run(date(2026, 3, 12))

    assert [d for d, _, _ in runs_of(schedule)] == [date(2026, 3, 10), date(2026, 3, 11), date(2026, 3, 12)]
    assert ScheduledPayment.objects.get(id=schedule.id).next_run_date == date(2026, 3, 13)


def test_work_is_done_in_chunks(customer):
    account = funded_account(customer, "100.00")
    for _ in range(7):
        make_schedule(account)
    chunks = []

    summary = scheduled_payments_run(DAY, chunk_size=3, on_progress=chunks.append)

    assert summary.paid == 7
    assert chunks == [3, 3, 1]


def test_the_command_runs_a_given_day_and_prints_a_summary(customer):
    account = funded_account(customer, "5.00")
    make_schedule(account, amount="3.00")
    make_schedule(account, amount="3.00")
    out = io.StringIO()

    call_command("run_scheduled_payments", "--date", "2026-03-10", stdout=out, stderr=io.StringIO())

    text = out.getvalue()
    assert "Scheduled payments for 2026-03-10: 1 paid, 0 held for review, 1 failed." in text
    assert "INSUFFICIENT_FUNDS" in text


@pytest.mark.parametrize(
    "day",
    [
        "10/03/2026",
        "20260310",
        "2026-W11-2",
        "2026-03-10\n",
        "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0661\u0660",  # ٢٠٢٦-٠٣-١٠
        "2026-02-30",
    ],
)
def test_the_command_refuses_a_bad_date(db, day):
    with pytest.raises(CommandError, match="--date must be YYYY-MM-DD"):
        call_command("run_scheduled_payments", "--date", day)


@pytest.mark.parametrize(
    "day", ["20260310", "2026-03-10\n", "\u0662\u0660\u0662\u0666-\u0660\u0663-\u0661\u0660"]
)
def test_the_beat_task_refuses_a_bad_date(customer, day):
    make_schedule(funded_account(customer, "10.00"))

    with pytest.raises(ValueError, match="Not a YYYY-MM-DD date"):
        run_scheduled_payments.delay(day).get()

    assert ScheduleRun.objects.count() == 0


def test_the_beat_task_runs_the_day_given_and_beat_calls_it_every_tick(customer):
    account = funded_account(customer, "10.00")
    make_schedule(account)

    outcome = run_scheduled_payments.delay("2026-03-10").get()

    assert outcome == {"paid": 1, "held": 0, "failed": 0}
    entry = settings.CELERY_BEAT_SCHEDULE["run-scheduled-payments"]
    assert entry["task"] == "payments.tasks.run_scheduled_payments"
    assert entry["schedule"] <= 30
    assert settings.CELERY_TIMEZONE == "UTC"


@pytest.mark.parametrize(
    ("moment", "paid"),
    [(datetime(2026, 3, 10, 1, 59, 59, tzinfo=UTC), 0), (datetime(2026, 3, 10, 2, 0, 0, tzinfo=UTC), 1)],
)
def test_a_tick_pays_a_days_schedules_from_two_utc_on_and_once(customer, moment, paid):
    account = funded_account(customer, "10.00")
    make_schedule(account)

    with time_machine.travel(moment, tick=False):
        first = run_scheduled_payments.delay().get()
        second = run_scheduled_payments.delay().get()

    assert (first["paid"], second["paid"]) == (paid, 0)
    assert ScheduleRun.objects.count() == paid


# A run pays what is due on or before its day, so running a later day would debit
# today every run dated up to it: 30 daily payments for a day 30 days out.


@pytest.fixture
def late_on_the_10th():
    """23:59:59 UTC on DAY: the 11th has begun east of UTC, not yet in UTC."""
    with time_machine.travel(datetime(2026, 3, 10, 23, 59, 59, tzinfo=UTC), tick=False):
        yield


def test_a_run_for_a_day_after_today_utc_is_refused_and_pays_nothing(customer, late_on_the_10th):
    account = funded_account(customer, "100.00")
    due_today = make_schedule(account, frequency="DAILY")
    due_tomorrow = make_schedule(account, anchor=date(2026, 3, 11))

    with pytest.raises(RunDateInFuture, match=r"2026-03-11.*after today \(2026-03-10, UTC\)"):
        scheduled_payments_run(date(2026, 3, 11))
    with pytest.raises(RunDateInFuture):
        scheduled_payments_run(date(2026, 4, 9))

    assert ScheduleRun.objects.count() == 0 and PaymentRequest.objects.count() == 0
    assert ScheduledPayment.objects.get(id=due_today.id).next_run_date == DAY
    assert ScheduledPayment.objects.get(id=due_tomorrow.id).next_run_date == date(2026, 3, 11)
    assert balance(account) == Decimal("100.00")


def test_today_is_run_and_past_days_are_caught_up_under_a_frozen_clock(customer, late_on_the_10th):
    account = funded_account(customer, "100.00")
    schedule = make_schedule(account, anchor=date(2026, 3, 8), frequency="DAILY")

    caught_up = scheduled_payments_run(date(2026, 3, 9))
    today = scheduled_payments_run(DAY)

    assert (caught_up.paid, today.paid) == (2, 1)
    assert [d for d, _, _ in runs_of(schedule)] == [date(2026, 3, 8), date(2026, 3, 9), DAY]
    assert ScheduledPayment.objects.get(id=schedule.id).next_run_date == date(2026, 3, 11)


def test_the_command_refuses_a_later_day_with_a_readable_error(customer, late_on_the_10th):
    account = funded_account(customer, "100.00")
    make_schedule(account, frequency="DAILY")

    with pytest.raises(CommandError, match=r"2026-04-09.*after today \(2026-03-10, UTC\)") as refused:
        call_command("run_scheduled_payments", "--date", "2026-04-09", stdout=io.StringIO())

    assert refused.value.returncode != 0
    assert ScheduleRun.objects.count() == 0 and balance(account) == Decimal("100.00")


def test_the_command_line_exits_non_zero_on_a_later_day(customer, late_on_the_10th, capsys, monkeypatch):
    account = funded_account(customer, "100.00")
    make_schedule(account)
    # run_from_argv closes every connection on its way out, the test's own included.
    monkeypatch.setattr("django.core.management.base.connections.close_all", lambda: None)

    with pytest.raises(SystemExit) as exited:
        ManagementUtility(["manage.py", "run_scheduled_payments", "--date", "2026-03-11"]).execute()

    assert exited.value.code == 1
    assert "CommandError: Cannot run scheduled payments for 2026-03-11" in capsys.readouterr().err
    assert ScheduleRun.objects.count() == 0 and balance(account) == Decimal("100.00")


def test_the_beat_task_refuses_a_later_day(customer, late_on_the_10th):
    account = funded_account(customer, "100.00")
    make_schedule(account)

    with pytest.raises(RunDateInFuture):
        run_scheduled_payments.delay("2026-03-11").get()

    assert ScheduleRun.objects.count() == 0 and balance(account) == Decimal("100.00")


def test_a_daily_schedule_made_through_the_api_is_not_paid_ahead_by_a_run_30_days_out(
    api, customer_auth, account, beneficiary
):
    """The audit's scenario, on the real clock."""
    tomorrow = utc_today() + timedelta(days=1)
    created = api.post(
        payments_url(account.customer_id, account.id),
        {
            "amount": "1.00",
            "reference": "Daily",
            "beneficiaryId": str(beneficiary.id),
            "scheduledDate": tomorrow.isoformat(),
            "frequency": "DAILY",
        },
        format="json",
        **customer_auth,
    )
    assert created.status_code == 200, created.json()
    before = balance(account)

    with pytest.raises(CommandError):
        call_command(
            "run_scheduled_payments",
            "--date",
            (utc_today() + timedelta(days=30)).isoformat(),
            stdout=io.StringIO(),
        )

    assert PaymentRequest.objects.count() == 0 and ScheduleRun.objects.count() == 0
    assert balance(account) == before
