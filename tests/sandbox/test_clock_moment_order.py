"""At one moment of a clock, expiries run before the day's schedule run: card holds
that expire at 02:00 UTC are given back before the 02:00 run pays, so a schedule
that only those funds cover succeeds, and the events say so in that order."""

from datetime import timedelta

import pytest

from tests.sandbox.helpers import account_url, advance, as_customer, clock_make, customer_make, midnight, z

PAYEE = {"name": "Landlord", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "12345678"}}


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def test_holds_expiring_at_the_runs_moment_are_given_back_before_it_pays(api, sandbox, program):
    # given a clock at 02:00 UTC, so authorizations made now expire at 02:00 seven
    # days on, the very moment of that day's schedule run
    frozen = midnight(-100) + timedelta(hours=2)
    due = frozen + timedelta(days=7)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    customer = as_customer(made, program)
    scheduled = api.post(
        f"{account_url(made)}/payments",
        {
            "amount": "100.00",
            "currency": "GBP",
            "reference": "Rent",
            "payee": PAYEE,
            "scheduledDate": due.date().isoformat(),
        },
        format="json",
        **customer,
    )
    assert scheduled.status_code == 200, scheduled.content
    schedule_id = scheduled.json()["data"]["bankTransfer"]["scheduleId"]
    # and holds that leave 40.00 of the 100,000.00 available, short of the schedule's 100.00
    for _ in range(4):
        held = api.post(
            f"/v1/sandbox/cards/{made['cardId']}/authorizations",
            {"amount": "24990.00", "currency": "GBP", "merchantName": "Car Dealer"},
            format="json",
            **customer,
        )
        assert held.status_code == 200 and held.json()["data"]["status"] == "PENDING", held.content
        assert held.json()["data"]["expiresAt"] == z(due)
    balances = api.get(f"{account_url(made)}/balances", **customer).json()["data"]
    assert balances["available"] == "40.00"

    # when the clock moves to that moment
    moved = advance(api, sandbox, program, clock["testClockId"], due)
    assert moved.status_code == 200, moved.content

    # then the holds expired first and the run paid from the funds they gave back
    listed = api.get(f"{account_url(made)}/cards/{made['cardId']}/authorizations", **customer).json()["data"][
        "authorizations"
    ]
    assert [a["status"] for a in listed] == ["EXPIRED"] * 4
    events = api.get("/v1/events?limit=100", **customer).json()["data"]["events"]
    at_due = [e for e in events if e["createdAt"] in (due.isoformat(), z(due))]
    kinds = [e["type"] for e in at_due if e["type"].startswith(("card_authorization.", "scheduled_payment."))]
    # newest first: the run's events, written after the four expiries of the same moment
    assert kinds == [
        "scheduled_payment.completed",
        "scheduled_payment.run_succeeded",
        *["card_authorization.expired"] * 4,
    ]
    assert all(e["data"]["scheduleId"] == schedule_id for e in at_due if e["type"].startswith("scheduled_"))
    balances = api.get(f"{account_url(made)}/balances", **customer).json()["data"]
    assert balances["balance"] == balances["available"] == "99900.00"
    requests = api.get(f"{account_url(made)}/payment-requests", **customer).json()["data"]["paymentRequests"]
    assert [r["createdDateTime"] for r in requests] == [due.isoformat()], requests
