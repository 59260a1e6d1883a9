"""Attacker's and limit edges of the sandbox money routes, over HTTP: bodies of
the wrong type, oversized or deeply nested; amounts at their limits; currency
edge cases; a management caller on a customer whose test clock is advancing.
Each refusal is a 4xx with the error envelope and changes nothing."""

import json
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from bankapi.clock import customer_clock_known
from bankapi.models import Account, Program, TestClock
from cards.models import CardAuthorization
from payments.formats import MAX_AMOUNT
from payments.models import IncomingPayment
from tests.cards.conftest import assert_error
from tests.cards.test_authorizations import act, authorize


def _raw(api, who: dict, url: str, text: str, **headers):
    return api.generic("POST", url, text, content_type="application/json", **who, **headers)


def _routes(consumer, authorization_id: str) -> dict[str, str]:
    """The routes that take a body."""
    return {
        "authorize": f"/v1/sandbox/cards/{consumer.card_id}/authorizations",
        "clear": f"/v1/sandbox/card-authorizations/{authorization_id}/clear",
    }


def _state(consumer) -> tuple:
    account = Account.objects.get(id=consumer.account_id)
    return (
        account.balance,
        account.held,
        account.outbound_total,
        sorted(CardAuthorization.objects.values_list("id", "status")),
    )


BAD_BODIES = [
    ("a list", "[]"),
    ("a string", '"40.00"'),
    ("a number", "40"),
    ("null", "null"),
    ("not JSON", "{amount: 40}"),
    ("deeply nested", '{"amount": ' + "[" * 5000 + "]" * 5000 + "}"),
    (
        "an object nested in the amount",
        '{"amount": {"value": "40.00"}, "currency": "GBP", "merchantName": "X"}',
    ),
    ("a number amount", '{"amount": 40.5, "currency": "GBP", "merchantName": "X"}'),
    ("a list amount", '{"amount": ["40.00"], "currency": "GBP", "merchantName": "X"}'),
    ("a boolean amount", '{"amount": true, "currency": "GBP", "merchantName": "X"}'),
    ("a number currency", '{"amount": "40.00", "currency": 826, "merchantName": "X"}'),
    ("a list merchant", '{"amount": "40.00", "currency": "GBP", "merchantName": ["X"]}'),
    (
        "an MCC number",
        '{"amount": "40.00", "currency": "GBP", "merchantName": "X", "merchantCategoryCode": 5814}',
    ),
]


@pytest.mark.parametrize(("case", "text"), BAD_BODIES, ids=[case for case, _ in BAD_BODIES])
def test_a_body_of_the_wrong_shape_is_a_4xx_envelope_and_changes_nothing(api, consumer, case, text):
    authorization_id = authorize(api, consumer.auth, consumer.card_id).json()["data"]["authorizationId"]
    before = _state(consumer)
    for route, url in _routes(consumer, authorization_id).items():
        answer = _raw(api, consumer.auth, url, text, HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
        assert 400 <= answer.status_code < 500, (route, case, answer.content)
        body = answer.json()
        assert body["success"] is False and body["code"] and body["message"], (route, case, body)
    assert _state(consumer) == before


def test_an_oversized_body_is_413_and_changes_nothing(api, consumer):
    authorization_id = authorize(api, consumer.auth, consumer.card_id).json()["data"]["authorizationId"]
    before = _state(consumer)
    huge = json.dumps({"amount": "40.00", "currency": "GBP", "merchantName": "x" * (3 * 1024 * 1024)})
    urls = [
        *_routes(consumer, authorization_id).values(),
        f"/v1/sandbox/card-authorizations/{authorization_id}/reverse",
        f"/v1/sandbox/cards/{consumer.card_id}/freeze",
        "/v1/sandbox/incoming-payments",
    ]
    for url in urls:
        answer = _raw(api, consumer.auth, url, huge)
        assert_error(answer, 413, "PAYLOAD_TOO_LARGE")
    assert _state(consumer) == before


def test_amounts_at_their_limits(api, consumer):
    # Limits above every balance (the largest a program may hold is read back
    # exactly on PostgreSQL only: SQLite keeps 15 digits).
    Program.objects.filter(id=consumer.program_id).update(
        per_payment_limit=Decimal("1000000000.00"), daily_outbound_limit=Decimal("1000000000.00")
    )
    # the largest amount a payment may have is a valid request (declined: above the limit)
    largest = authorize(api, consumer.auth, consumer.card_id, amount=f"{MAX_AMOUNT:.2f}").json()["data"]
    assert (largest["status"], largest["declineReason"]) == ("DECLINED", "LIMIT_EXCEEDED")
    # one cent more, and what is no amount, are 400 naming it
    for amount in (f"{MAX_AMOUNT + Decimal('0.01'):.2f}", "0.00", "-0.01", "0.001", "1e2", " 1.00", "NaN"):
        answer = authorize(api, consumer.auth, consumer.card_id, amount=amount)
        body = assert_error(answer, 400, "VALIDATION_ERROR")
        assert [error["field"] for error in body["errors"]] == ["amount"], amount
    # the smallest amount, and all that is left available, are approved
    assert (
        authorize(api, consumer.auth, consumer.card_id, amount="0.01").json()["data"]["status"] == "PENDING"
    )
    rest = authorize(api, consumer.auth, consumer.card_id, amount="99999.99").json()["data"]
    assert rest["status"] == "PENDING"
    account = Account.objects.get(id=consumer.account_id)
    assert (account.balance, account.held) == (Decimal("100000.00"), Decimal("100000.00"))
    # one cent more is declined
    over = authorize(api, consumer.auth, consumer.card_id, amount="0.01").json()["data"]
    assert over["declineReason"] == "INSUFFICIENT_FUNDS"
    # a clear of nothing, or of a cent more than authorized, is 400; of one cent, paid
    authorization_id = rest["authorizationId"]
    for amount in ("0.00", "100000.00"):
        answer = act(api, consumer.auth, authorization_id, "clear", {"amount": amount})
        assert_error(answer, 400, "VALIDATION_ERROR")
    cleared = act(api, consumer.auth, authorization_id, "clear", {"amount": "0.01"}).json()["data"]
    assert (cleared["status"], cleared["clearedAmount"]) == ("CLEARED", "0.01")
    account = Account.objects.get(id=consumer.account_id)
    assert (account.balance, account.held) == (Decimal("99999.99"), Decimal("0.01"))


@pytest.mark.parametrize(
    ("currency", "status"),
    [
        ("GBP", 400),
        ("gbp", 400),
        ("GBP ", 400),
        ("GB", 400),
        ("", 400),
        ("XXX", 200),
        ("EUR", 200),
        ("JPY", 200),
    ],
)
def test_currency_edges(api, consumer, currency, status):
    answer = authorize(api, consumer.auth, consumer.card_id, currency=currency)
    if currency == "GBP":
        assert answer.json()["data"]["status"] == "PENDING"
        return
    if status == 400:
        body = assert_error(answer, 400, "VALIDATION_ERROR")
        assert [error["field"] for error in body["errors"]] == ["currency"]
    else:
        assert answer.json()["data"]["declineReason"] == "CURRENCY_NOT_SUPPORTED"
    assert Account.objects.get(id=consumer.account_id).held == 0


def test_management_cannot_move_an_advancing_clocks_customers_money(api, consumer, management):
    """While a clock advances, its customers' requests that move money or make
    objects answer 409: the program's management caller's too."""
    clock = TestClock.objects.create(
        program_id=consumer.program_id,
        sandbox=True,
        frozen_time=timezone.now(),
        advancing_to=timezone.now() + timedelta(days=1),
        heartbeat_at=timezone.now(),
    )
    pending = authorize(api, consumer.auth, consumer.card_id).json()["data"]["authorizationId"]
    Account.objects.get(id=consumer.account_id).customer.__class__.objects.filter(
        id=consumer.customer_id
    ).update(test_clock=clock)

    customer_clock_known(uuid.UUID(consumer.customer_id), clock.id)
    before = _state(consumer)
    program = consumer.program_id
    assert_error(authorize(api, management.id, consumer.card_id, program_id=program), 409, "INVALID_STATE")
    assert_error(act(api, management.id, pending, "clear", program_id=program), 409, "INVALID_STATE")
    assert_error(act(api, management.id, pending, "reverse", program_id=program), 409, "INVALID_STATE")
    Account.objects.filter(id=consumer.account_id).update(iban="GB33BUKB20201555555555")
    incoming = api.post(
        f"/v1/sandbox/incoming-payments?programId={program}",
        {
            "creditorIban": "GB33BUKB20201555555555",
            "amount": "10.00",
            "currency": "GBP",
            "debtorName": "Acme Ltd",
        },
        format="json",
        **management.id,
    )
    assert_error(incoming, 409, "INVALID_STATE")
    assert _state(consumer) == before
    assert IncomingPayment.objects.count() == 0
