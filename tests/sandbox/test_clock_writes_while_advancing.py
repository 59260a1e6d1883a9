"""While a clock advances, nothing may move its customers' money or make their
objects, whoever asks: its customers' own users (every write route) and the
program's management caller at the sandbox's money routes (an incoming
payment, a card authorization, its clearing or reversal) are all answered 409
INVALID_STATE and nothing moves; reads are served. Once it reads ready, the
same requests go through. A customer without a clock is never held up."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from bankapi.models import TestClock
from cards.models import CardAuthorization
from payments.models import IncomingPayment
from tests.sandbox.helpers import account_url, as_customer, clock_make, customer_make, management, midnight


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def incoming(api, sandbox, program, made):
    return api.post(
        f"/v1/sandbox/incoming-payments?programId={program}",
        {
            "creditorIban": made["accountIban"],
            "amount": "25.00",
            "currency": "GBP",
            "debtorName": "Payer Ltd",
        },
        format="json",
        **management(sandbox),
    )


def authorize(api, sandbox, program, made):
    return api.post(
        f"/v1/sandbox/cards/{made['cardId']}/authorizations?programId={program}",
        {"amount": "40.00", "currency": "GBP", "merchantName": "Corner Shop"},
        format="json",
        **management(sandbox),
    )


def act(api, sandbox, program, authorization_id, action):
    return api.post(
        f"/v1/sandbox/card-authorizations/{authorization_id}/{action}?programId={program}",
        {},
        format="json",
        **management(sandbox),
    )


def advancing(clock_id: str, frozen) -> None:
    """As an advance running in another process leaves the clock."""
    TestClock.objects.filter(id=clock_id).update(
        advancing_to=frozen + timedelta(days=30), heartbeat_at=timezone.now()
    )


def ready(clock_id: str) -> None:
    TestClock.objects.filter(id=clock_id).update(advancing_to=None, heartbeat_at=None)


def refused(answer) -> bool:
    return answer.status_code == 409 and answer.json()["code"] == "INVALID_STATE"


def test_management_money_routes_wait_while_the_customers_clock_advances(api, sandbox, program):
    frozen = midnight(-50)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    before = authorize(api, sandbox, program, made)
    assert before.status_code == 200, before.content
    pending = [before.json()["data"]["authorizationId"]]
    second = authorize(api, sandbox, program, made)
    pending.append(second.json()["data"]["authorizationId"])

    advancing(clock["testClockId"], frozen)
    assert refused(incoming(api, sandbox, program, made))
    assert refused(authorize(api, sandbox, program, made))
    assert refused(act(api, sandbox, program, pending[0], "clear"))
    assert refused(act(api, sandbox, program, pending[1], "reverse"))
    # Nothing moved, nothing was made, and reads are served.
    assert not IncomingPayment.objects.filter(customer_id=made["customerId"]).exists()
    assert CardAuthorization.objects.filter(customer_id=made["customerId"]).count() == 2
    assert set(CardAuthorization.objects.values_list("status", flat=True).filter(id__in=pending)) == {
        "PENDING"
    }
    balance = api.get(f"{account_url(made)}/balances", **as_customer(made, program))
    assert balance.status_code == 200
    assert Decimal(balance.json()["data"]["balance"]) == Decimal("100000.00")
    assert Decimal(balance.json()["data"]["available"]) == Decimal("99920.00")

    ready(clock["testClockId"])
    assert incoming(api, sandbox, program, made).status_code == 200
    assert act(api, sandbox, program, pending[0], "clear").status_code == 200
    assert act(api, sandbox, program, pending[1], "reverse").status_code == 200
    balance = api.get(f"{account_url(made)}/balances", **as_customer(made, program)).json()["data"]
    assert Decimal(balance["balance"]) == Decimal("100000.00") + Decimal("25.00") - Decimal("40.00")


def test_a_refused_write_does_not_spend_its_idempotency_key(api, sandbox, program):
    frozen = midnight(-50)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    key = {"HTTP_IDEMPOTENCY_KEY": "5d1c7f0e-51a6-4f55-9d0a-8c3c6a1f0a11"}
    body = {"creditorIban": made["accountIban"], "amount": "25.00", "currency": "GBP", "debtorName": "Payer"}
    url = f"/v1/sandbox/incoming-payments?programId={program}"
    advancing(clock["testClockId"], frozen)
    assert refused(api.post(url, body, format="json", **management(sandbox), **key))
    ready(clock["testClockId"])
    first = api.post(url, body, format="json", **management(sandbox), **key)
    assert first.status_code == 200, first.content
    again = api.post(url, body, format="json", **management(sandbox), **key)
    assert again.content == first.content
    assert IncomingPayment.objects.filter(customer_id=made["customerId"]).count() == 1


def test_a_customer_without_a_clock_is_not_held_up_by_anothers_advance(api, sandbox, program):
    frozen = midnight(-50)
    clock = clock_make(api, sandbox, program, frozen)
    customer_make(api, sandbox, program, clock["testClockId"])
    other = customer_make(api, sandbox, program)
    advancing(clock["testClockId"], frozen)
    assert incoming(api, sandbox, program, other).status_code == 200
    assert authorize(api, sandbox, program, other).status_code == 200
