"""GET .../limits agrees with what payment creation enforces, on both sides of
each limit."""

import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine

from bankapi.models import Program
from payments.models import PaymentRequest
from payments.services.settlement import payment_fail
from tests.payments.conftest import payments_url
from tests.support.auth import access_header
from tests.support.factories import funded_account

PAYEE = {"name": "Jane", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}


def pay(api, auth, account, amount):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Limits", "payee": PAYEE},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def limits(api, auth, account) -> dict:
    response = api.get(payments_url(account.customer_id, account.id, "limits"), **auth)
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def next_payment_fits(data: dict) -> Decimal:
    return min(Decimal(data["daily"]["remaining"]), Decimal(data["perPayment"]["max"]))


@pytest.fixture
def token_now(payer):
    """The customer's access token issued at call time: under a travelled clock,
    one issued at the real time would not be valid yet."""
    return lambda: access_header(payer.email, payer.program_id)


@pytest.fixture
def clock():
    """Tests start at 15:00 UTC on 1 July 2026, before their account is funded."""
    with time_machine.travel(datetime(2026, 7, 1, 15, 0, tzinfo=UTC), tick=False) as traveller:
        yield traveller


@pytest.fixture
def limited(clock, customer):
    """An account well funded, on a program with a fee, a per-payment maximum
    of 50.00 and a daily limit of 120.00."""
    Program.objects.filter(id=customer.program_id).update(
        per_payment_limit=Decimal("50.00"),
        daily_outbound_limit=Decimal("120.00"),
        fee_per_payment=Decimal("0.50"),
    )
    return funded_account(customer, "1000.00")


def test_limits_say_what_the_next_payment_may_be_and_creation_agrees(api, token_now, limited):
    auth = token_now()
    assert limits(api, auth, limited) == {
        "currency": "GBP",
        "perPayment": {"max": "50.00"},
        "daily": {
            "limit": "120.00",
            "used": "0.00",
            "remaining": "120.00",
            "resetsAt": "2026-07-02T00:00:00+00:00",
        },
    }
    # The per-payment maximum binds: one cent over it is refused, it passes.
    over_max = pay(api, auth, limited, "50.01")
    assert (over_max.status_code, over_max.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert pay(api, auth, limited, str(next_payment_fits(limits(api, auth, limited)))).status_code == 200
    assert pay(api, auth, limited, "45.00").status_code == 200

    # Now the day's remainder binds (25.00 < 50.00): one cent over it is refused, it passes.
    data = limits(api, auth, limited)
    assert data["daily"] | {"resetsAt": None} == {
        "limit": "120.00",
        "used": "95.00",
        "remaining": "25.00",
        "resetsAt": None,
    }
    over_remaining = pay(api, auth, limited, str(Decimal(data["daily"]["remaining"]) + Decimal("0.01")))
    assert (over_remaining.status_code, over_remaining.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert pay(api, auth, limited, str(next_payment_fits(data))).status_code == 200
    assert limits(api, auth, limited)["daily"]["remaining"] == "0.00"
    assert pay(api, auth, limited, "0.01").json()["code"] == "LIMIT_EXCEEDED"


def test_a_payment_failing_after_acceptance_gives_its_amount_back(api, token_now, limited):
    auth = token_now()
    first = pay(api, auth, limited, "40.00")
    pay(api, auth, limited, "50.00")
    assert limits(api, auth, limited)["daily"]["used"] == "90.00"

    payment_fail(PaymentRequest.objects.get(id=first.json()["data"]["bankTransfer"]["requestId"]), "Returned")

    data = limits(api, auth, limited)
    assert (data["daily"]["used"], data["daily"]["remaining"]) == ("50.00", "70.00")
    # What it says is what creation takes: 50.00 (the maximum) now fits, and 20.01 more would not.
    assert pay(api, auth, limited, "50.00").status_code == 200
    assert pay(api, auth, limited, "20.01").json()["code"] == "LIMIT_EXCEEDED"
    assert pay(api, auth, limited, "20.00").status_code == 200


def test_the_day_starts_again_at_midnight_utc(api, clock, token_now, limited):
    clock.move_to(datetime(2026, 7, 1, 23, 59, tzinfo=UTC))
    auth = token_now()
    pay(api, auth, limited, "50.00")
    assert limits(api, auth, limited)["daily"]["used"] == "50.00"
    clock.move_to(datetime(2026, 7, 2, 0, 0, tzinfo=UTC))
    data = limits(api, auth, limited)

    assert data["daily"] == {
        "limit": "120.00",
        "used": "0.00",
        "remaining": "120.00",
        "resetsAt": "2026-07-03T00:00:00+00:00",
    }


def test_a_limit_lowered_below_what_was_sent_leaves_nothing_remaining(api, customer, token_now, limited):
    auth = token_now()
    pay(api, auth, limited, "50.00")
    Program.objects.filter(id=customer.program_id).update(daily_outbound_limit=Decimal("30.00"))

    data = limits(api, auth, limited)

    assert (data["daily"]["used"], data["daily"]["remaining"]) == ("50.00", "0.00")
    assert pay(api, auth, limited, "0.01").json()["code"] == "LIMIT_EXCEEDED"
