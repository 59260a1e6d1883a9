"""A clock's customers live at its time: schedules pay once per due date as
beat's run pays them, quotes, drafts and approvals expire by the clock, and
statements, balances, limits and events read its day."""

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from approvals.models import ApprovalPolicy
from bankapi.models import Customer, TestClock
from payments.ledger import ledger_check
from payments.models import PaymentRequest, ScheduleRun
from payments.services.schedules import scheduled_payments_run, utc_today
from tests.sandbox.helpers import (
    account_url,
    advance,
    as_customer,
    clock_make,
    customer_make,
    management,
    midnight,
    z,
)

PAYEE = {"name": "Landlord", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "12345678"}}


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


@pytest.fixture
def world(api, sandbox, program):
    """A clock 100 days ago at 00:00 UTC, and a customer living on it."""
    frozen = midnight(-100)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    return frozen, clock, made


def pay(api, made, program, **body):
    return api.post(
        f"{account_url(made)}/payments",
        {"amount": "100.00", "currency": "GBP", "reference": "Rent", "payee": PAYEE, **body},
        format="json",
        **as_customer(made, program),
    )


def test_the_customer_and_its_bookings_live_at_the_clock(api, sandbox, program, world):
    frozen, clock, made = world
    customer = Customer.objects.get(id=made["customerId"])
    assert str(customer.test_clock_id) == clock["testClockId"] and customer.created_at == frozen
    assert made["testClockId"] == clock["testClockId"]
    paid = pay(api, made, program)
    assert paid.status_code == 200, paid.content
    assert paid.headers["Sandbox-Clock"] == z(frozen)
    listed = api.get(f"{account_url(made)}/payment-requests", **as_customer(made, program)).json()["data"]
    assert listed["paymentRequests"][0]["createdDateTime"].startswith(frozen.date().isoformat())
    # Other customers' answers carry no clock.
    other = sandbox["customer"]
    from tests.support.auth import access_header

    plain = api.get(
        f"/v1/customers/{other['customerId']}/accounts/{other['accountId']}/balances",
        **access_header(other["email"], program),
    )
    assert plain.status_code == 200 and "Sandbox-Clock" not in plain.headers


def test_a_62_day_advance_pays_a_monthly_schedule_once_per_due_date(api, sandbox, program, world):
    frozen, clock, made = world
    first_day = (frozen + timedelta(days=5)).date()
    created = pay(api, made, program, scheduledDate=first_day.isoformat(), frequency="MONTHLY")
    assert created.status_code == 200, created.content
    schedule_id = created.json()["data"]["bankTransfer"]["scheduleId"]
    to = frozen + timedelta(days=62)
    moved = advance(api, sandbox, program, clock["testClockId"], to)
    assert moved.status_code == 200, moved.content
    runs = ScheduleRun.objects.filter(schedule_id=schedule_id).order_by("run_date")
    due = [first_day]
    while True:
        month = due[-1].month % 12 + 1
        year = due[-1].year + (due[-1].month == 12)
        nxt = due[-1].replace(year=year, month=month, day=min(first_day.day, 28))
        if datetime.combine(nxt, time(2), tzinfo=UTC) > to:
            break
        due.append(nxt)
    assert [run.run_date for run in runs] == due
    assert all(run.outcome == "PAID" for run in runs)
    requests = PaymentRequest.objects.filter(schedule_id=schedule_id).order_by("created_at")
    # Each paid while the clock read that day's 02:00 UTC.
    assert [r.created_at for r in requests] == [datetime.combine(d, time(2), tzinfo=UTC) for d in due]
    # Never again: a second advance and the real beat run pay nothing more.
    assert advance(api, sandbox, program, clock["testClockId"], to + timedelta(hours=1)).status_code == 200
    scheduled_payments_run(utc_today())
    assert PaymentRequest.objects.filter(schedule_id=schedule_id).count() == len(due)
    assert ledger_check().ok


def test_real_runs_skip_a_clocks_customers_and_the_sandbox_run_is_409(api, sandbox, program):
    clock = clock_make(api, sandbox, program, midnight(0))
    made = customer_make(api, sandbox, program, clock["testClockId"])
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    created = pay(api, made, program, scheduledDate=tomorrow.isoformat(), frequency="DAILY")
    schedule_id = created.json()["data"]["bankTransfer"]["scheduleId"]
    # The real run of a later day (as beat's) leaves the clock's customers alone.
    from payments.services import schedules

    schedules._run_in_chunks(schedules.scheduled_payments_due(tomorrow + timedelta(days=3)), tomorrow)
    assert not ScheduleRun.objects.filter(schedule_id=schedule_id).exists()
    refused = api.post(
        "/v1/sandbox/scheduled-payments/run",
        {"date": tomorrow.isoformat()},
        format="json",
        **as_customer(made, program),
    )
    assert refused.status_code == 409 and refused.json()["code"] == "INVALID_STATE"


def test_statements_balances_and_limits_read_the_clocks_day(api, sandbox, program, world):
    frozen, clock, made = world
    assert pay(api, made, program).status_code == 200
    headers = as_customer(made, program)
    day = frozen.date().isoformat()
    statement = api.get(f"{account_url(made)}/statements?from={day}&to={day}", **headers)
    assert statement.status_code == 200, statement.content
    entries = statement.json()["data"]["entries"]
    assert entries[0]["bookedAt"].startswith(day) and entries[0]["creditDebit"] == "CRDT"
    # "Not after today" is the clock's today.
    tomorrow = (frozen + timedelta(days=1)).date().isoformat()
    assert api.get(f"{account_url(made)}/statements?from={day}&to={tomorrow}", **headers).status_code == 400
    balance = api.get(f"{account_url(made)}/balances", **headers).json()["data"]
    assert balance["asOf"].startswith(day) and balance["balance"] == "99900.00"
    future = z(frozen + timedelta(hours=1)).replace("+", "%2B")
    assert api.get(f"{account_url(made)}/balances?asOf={future}", **headers).status_code == 400
    limits = api.get(f"{account_url(made)}/limits", **headers).json()["data"]
    assert limits["daily"]["used"] == "100.00"
    assert limits["daily"]["resetsAt"].startswith((frozen + timedelta(days=1)).date().isoformat())
    # A day later by the clock: yesterday's payment no longer counts, the balance as of then holds.
    assert (
        advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=1, hours=3)).status_code
        == 200
    )
    limits = api.get(f"{account_url(made)}/limits", **headers).json()["data"]
    assert limits["daily"]["used"] == "0.00"
    was = api.get(f"{account_url(made)}/balances?asOf={z(frozen - timedelta(seconds=1))}", **headers)
    assert was.json()["data"]["balance"] == "0.00"
    assert api.get(f"{account_url(made)}/statements?from={day}&to={tomorrow}", **headers).status_code == 200


def test_a_quote_and_a_draft_expire_by_the_clock(api, sandbox, program, world):
    frozen, clock, made = world
    headers = as_customer(made, program)
    quote = api.get(
        f"/v1/accounts/{made['accountId']}/fx/quote"
        "?currencyOne=GBP&currencyTwo=EUR&amount=10.00&amountCurrency=GBP&tenor=ON",
        **headers,
    )
    assert quote.status_code == 200, quote.content
    data = quote.json()["data"]
    assert data["validUntil"].startswith(frozen.date().isoformat())
    verified = api.post(
        f"/v1/customers/{made['customerId']}/batch-payments",
        {"action": "verify", "payments": [batch_item(made)]},
        format="json",
        **headers,
    )
    assert verified.status_code == 200, verified.content
    draft_url = f"/v1/customers/{made['customerId']}/batch-payments/{verified.json()['requestId']}"
    draft = api.get(draft_url, **headers).json()["data"]["draft"]
    assert draft["status"] == "DRAFT"
    assert draft["createdDateTime"].startswith(frozen.date().isoformat())
    assert (
        advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(minutes=1)).status_code == 200
    )
    used = api.post(
        f"{account_url(made)}/international-transfers",
        {"quoteId": data["quoteId"], "payee": PAYEE, "reference": "Late"},
        format="json",
        **headers,
    )
    assert used.status_code == 422 and used.json()["code"] == "QUOTE_EXPIRED"
    assert advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=1)).status_code == 200
    assert api.get(draft_url, **headers).json()["data"]["draft"]["status"] == "EXPIRED"


def batch_item(made: dict) -> dict:
    from bankapi.models import Account

    account = Account.objects.get(id=made["accountId"])
    return {
        "payer": {
            "account": {"type": "uk", "sortCode": account.sort_code, "accountNumber": account.account_number}
        },
        "payee": {
            "name": "Supplier",
            "account": {"type": "uk", "sortCode": "200000", "accountNumber": "12345678"},
        },
        "reference": "Invoice 1",
        "amount": "10.00",
    }


def held_for_approval_on_a_clock(api, sandbox):
    """A business customer on a clock frozen 100 days back, with a one-approver
    policy from 50.00 (24 hours to decide), and its payment held for approval:
    (program, frozen time, clock, made customer, the 202 answer)."""
    program = sandbox["businessProgramId"]
    frozen = midnight(-100)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    customer = Customer.objects.get(id=made["customerId"])
    ApprovalPolicy.objects.create(
        program_id=customer.program_id,
        sandbox=True,
        customer=customer,
        tiers=[{"minAmount": "50.00", "approvers": 1}],
        expires_after_hours=24,
        passkey_required=False,
    )
    held = pay(api, made, program)
    assert held.status_code == 202, held.content
    return program, frozen, clock, made, held


def test_an_approval_expires_by_the_clock(api, sandbox):
    program, frozen, clock, made, held = held_for_approval_on_a_clock(api, sandbox)
    approval_id = held.json()["data"]["approvalId"]
    assert held.json()["data"]["expiresAt"].startswith((frozen + timedelta(hours=24)).date().isoformat())
    assert (
        advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(hours=23)).status_code == 200
    )
    read = api.get(f"/v1/approvals/{approval_id}", **as_customer(made, program)).json()["data"]
    assert read["status"] == "PENDING_APPROVAL"
    assert (
        advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(hours=25)).status_code == 200
    )
    read = api.get(f"/v1/approvals/{approval_id}", **as_customer(made, program)).json()["data"]
    assert read["status"] == "EXPIRED"
    events = api.get("/v1/events?type=approval.expired", **as_customer(made, program)).json()["data"][
        "events"
    ]
    # It expired at its own moment (24 hours on), not at the next moment the advance had anyway.
    assert len(events) == 1 and events[0]["createdAt"] == (frozen + timedelta(hours=24)).isoformat()


def test_a_token_issued_before_a_years_advance_still_works(api, sandbox, program):
    frozen = midnight(-200)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    headers = as_customer(made, program)
    assert (
        advance(api, sandbox, program, clock["testClockId"], frozen + timedelta(days=366)).status_code == 200
    )
    answer = api.get(f"{account_url(made)}/balances", **headers)
    assert answer.status_code == 200 and answer.headers["Sandbox-Clock"] == z(frozen + timedelta(days=366))
    assert ledger_check().ok


def test_writes_wait_while_the_clock_advances_and_reads_are_served(api, sandbox, program, world):
    frozen, clock, made = world
    TestClock.objects.filter(id=clock["testClockId"]).update(
        advancing_to=frozen + timedelta(days=1), heartbeat_at=timezone.now()
    )
    refused = pay(api, made, program)
    assert refused.status_code == 409 and refused.json()["code"] == "INVALID_STATE"
    assert api.get(f"{account_url(made)}/balances", **as_customer(made, program)).status_code == 200
    another = api.post(
        f"/v1/sandbox/customers?programId={program}",
        {"testClockId": clock["testClockId"]},
        format="json",
        **management(sandbox),
    )
    assert another.status_code == 409
    assert PaymentRequest.objects.filter(account_id=made["accountId"]).count() == 0
    assert Decimal(
        api.get(f"{account_url(made)}/balances", **as_customer(made, program)).json()["data"]["balance"]
    ) == Decimal("100000.00")
