"""A clock customer's card authorization expires by the clock: seven days of the
clock's time after it was made, at that very moment, with its hold given back."""

from datetime import timedelta

import pytest

from tests.sandbox.helpers import account_url, advance, as_customer, clock_make, customer_make, midnight


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def test_a_card_authorization_expires_by_its_customers_clock(api, sandbox, program):
    frozen = midnight(-100) + timedelta(hours=10)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    customer = as_customer(made, program)
    authorized = api.post(
        f"/v1/sandbox/cards/{made['cardId']}/authorizations",
        {"amount": "40.00", "currency": "GBP", "merchantName": "Corner Shop"},
        format="json",
        **customer,
    )
    assert authorized.status_code == 200, authorized.content
    authorization = authorized.json()["data"]
    assert authorization["status"] == "PENDING"
    assert authorization["createdAt"] == frozen.isoformat().replace("+00:00", "Z")
    expires = frozen + timedelta(days=7)
    assert authorization["expiresAt"] == expires.isoformat().replace("+00:00", "Z")
    balance = api.get(f"{account_url(made)}/balances", **customer).json()["data"]
    assert balance["available"] == "99960.00"

    # The real beat sweep leaves a clock's customers alone, whatever the real time.
    from cards.tasks import expire_card_authorizations

    assert expire_card_authorizations() == 0

    clock_id = clock["testClockId"]
    assert advance(api, sandbox, program, clock_id, expires - timedelta(minutes=1)).status_code == 200
    detail = f"{account_url(made)}/cards/{made['cardId']}/authorizations/{authorization['authorizationId']}"
    assert api.get(detail, **customer).json()["data"]["status"] == "PENDING"

    assert advance(api, sandbox, program, clock_id, expires + timedelta(days=1)).status_code == 200
    assert api.get(detail, **customer).json()["data"]["status"] == "EXPIRED"
    events = api.get("/v1/events?type=card_authorization.expired", **customer).json()["data"]["events"]
    assert [event["createdAt"] for event in events] == [expires.isoformat()]
    balance = api.get(f"{account_url(made)}/balances", **customer).json()["data"]
    assert balance["available"] == balance["balance"] == "100000.00"
