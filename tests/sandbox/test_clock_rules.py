"""More of what reads a clock, over HTTP: which day is today for a clock
customer's schedules, events' `createdAt` and the `createdAfter` filter, the
order of a list whose objects share the clock's one time, and the real beat's
approval sweep leaving a clock's customers alone."""

from datetime import timedelta

import pytest

from approvals.tasks import expire_approvals
from payments.models import PaymentRequest, ScheduleRun
from tests.sandbox.helpers import (
    account_url,
    as_customer,
    clock_make,
    customer_make,
    management,
    midnight,
    z,
)
from tests.sandbox.test_clock_world import held_for_approval_on_a_clock, pay


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


@pytest.fixture
def world(api, sandbox, program):
    frozen = midnight(-100) + timedelta(hours=9)
    clock = clock_make(api, sandbox, program, frozen)
    return frozen, clock, customer_make(api, sandbox, program, clock["testClockId"])


def test_a_schedule_due_on_the_clocks_today_pays_at_once_and_the_real_today_waits(
    api, sandbox, program, world
):
    frozen, _, made = world
    today = pay(api, made, program, scheduledDate=frozen.date().isoformat(), frequency="MONTHLY")
    assert today.status_code == 200, today.content
    paid_now = today.json()["data"]["bankTransfer"]["scheduleId"]
    assert ScheduleRun.objects.filter(schedule_id=paid_now, run_date=frozen.date()).count() == 1
    assert PaymentRequest.objects.get(schedule_id=paid_now).created_at == frozen
    # The real today lies 100 days after the clock's: a future date for this customer.
    real_today = (frozen + timedelta(days=100)).date().isoformat()
    later = pay(api, made, program, scheduledDate=real_today, frequency="MONTHLY")
    assert later.status_code == 200, later.content
    waiting = later.json()["data"]["bankTransfer"]["scheduleId"]
    assert not ScheduleRun.objects.filter(schedule_id=waiting).exists()
    assert not PaymentRequest.objects.filter(schedule_id=waiting).exists()


def test_events_and_created_after_read_the_clock(api, sandbox, program, world):
    frozen, _, made = world
    headers = as_customer(made, program)
    assert pay(api, made, program).status_code == 200
    events = api.get("/v1/events?type=payment_request.accepted", **headers).json()["data"]["events"]
    assert [event["createdAt"].replace("+00:00", "Z") for event in events] == [z(frozen)]
    before = z(frozen - timedelta(seconds=1)).replace("+", "%2B")
    found = api.get(f"/v1/events?type=payment_request.accepted&createdAfter={before}", **headers)
    assert [event["eventId"] for event in found.json()["data"]["events"]] == [events[0]["eventId"]]
    # After the clock's time (yet a hundred days before the real now): nothing.
    at = z(frozen).replace("+", "%2B")
    none = api.get(f"/v1/events?type=payment_request.accepted&createdAfter={at}", **headers)
    assert none.status_code == 200 and none.json()["data"]["events"] == []


def test_a_list_of_objects_sharing_the_clocks_time_is_newest_first_in_write_order(
    api, sandbox, program, world
):
    frozen, _, made = world
    ids = []
    for amount in ("1.00", "2.00", "3.00"):
        answer = api.post(
            f"/v1/sandbox/incoming-payments?programId={program}",
            {"creditorIban": made["accountIban"], "amount": amount, "currency": "GBP", "debtorName": "Payer"},
            format="json",
            **management(sandbox),
        )
        assert answer.status_code == 200, answer.content
        assert answer.json()["data"]["receivedAt"].replace("+00:00", "Z") == z(frozen)
        ids.append(answer.json()["data"]["incomingPaymentId"])
    url = f"{account_url(made)}/incoming-payments?limit=2"
    page = api.get(url, **as_customer(made, program)).json()["data"]
    rest = api.get(f"{url}&nextToken={page['nextToken']}", **as_customer(made, program)).json()["data"]
    listed = [row["incomingPaymentId"] for row in page["incomingPayments"] + rest["incomingPayments"]]
    assert listed == list(reversed(ids))


def test_the_real_approval_sweep_leaves_a_clocks_customers_alone(api, sandbox):
    program, frozen, clock, made, held = held_for_approval_on_a_clock(api, sandbox)
    approval_id = held.json()["data"]["approvalId"]
    # Its expiresAt (by the clock) is 99 days before the real now: beat's sweep must not expire it.
    expire_approvals()
    read = api.get(f"/v1/approvals/{approval_id}", **as_customer(made, program)).json()["data"]
    assert read["status"] == "PENDING_APPROVAL"
