"""Whatever a client sends to the payment, transfer, FX and schedule routes, the
answer is an envelope the client can act on, never a 500: wrong JSON types, nulls,
huge numbers, NUL characters, lone surrogates, odd UUIDs, dates off the calendar."""

import json

import pytest

from payments.models import PaymentRequest
from tests.payments.conftest import payments_url

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")

ODD_VALUES = [
    None,
    True,
    0,
    -1,
    10**30,
    1.5,
    [],
    {},
    [None],
    {"a": 1},
    "",
    " ",
    "x" * 5000,
    "1" * 20000,
    "a\u0000b",
    "\ud800",
    "\udfff x",
    "\u202e\ufeff",
    "\U0001f4b8",
    "NaN",
    "-0",
    "1e400",
    "\u0661\u0660",
    "9999999999999999.99",
    "10000000000000000.00",
    "2026-02-30",
    "9999-12-31T23:00:00-05:00",
    "0001-01-01T00:00:00+05:00",
    "9999-12-31",
    "00000000-0000-0000-0000-000000000000",
    "{00000000-0000-0000-0000-000000000000}",
    "\u0660" * 32,
]
PAYMENT_FIELDS = [
    "amount",
    "currency",
    "reference",
    "purpose",
    "beneficiaryId",
    "payee",
    "cryptoQuote",
    "chargeBearer",
    "scheduledDate",
    "frequency",
    "idempotencyKey",
    "virtualIban",
    "feeWaived",
]
TRANSFER_FIELDS = [
    "quoteId",
    "beneficiaryId",
    "payee",
    "reference",
    "purpose",
    "chargeBearer",
    "idempotencyKey",
]
FX_PARAMETERS = ["currencyOne", "currencyTwo", "amountCurrency", "amount", "tenor", "valueDate"]


def post_json(api, url, body, auth):
    return api.post(url, json.dumps(body), content_type="application/json", **auth)


def answered(response) -> bool:
    """A 2xx or 4xx envelope."""
    return response.status_code < 500 and "success" in response.json()


@pytest.mark.parametrize("field", PAYMENT_FIELDS)
def test_an_odd_value_in_any_payment_field_is_answered(
    api, customer_auth, field, account, beneficiary, customer
):
    url = payments_url(customer.id, account.id)
    unanswered = []

    # A repeating payment takes the schedule's path through the service as well.
    extras = ({}, {"frequency": "DAILY"}) if field in ("amount", "scheduledDate", "feeWaived") else ({},)
    for value in ODD_VALUES:
        for extra in extras:
            body = {"amount": "1.00", "reference": "x", "beneficiaryId": str(beneficiary.id)}
            if field in ("payee", "cryptoQuote"):
                del body["beneficiaryId"]
            response = post_json(api, url, body | extra | {field: value}, customer_auth)
            if not answered(response):
                unanswered.append((repr(value)[:40], extra, response.status_code))

    assert unanswered == []


@pytest.mark.parametrize(
    "part", ["name", "account", "accountType", "type", "sortCode", "accountNumber", "iban", "bic"]
)
def test_an_odd_value_inside_an_inline_payee_is_answered(api, customer_auth, part, account, customer):
    url = payments_url(customer.id, account.id)
    unanswered = []

    for value in ODD_VALUES:
        payee = {"name": "Jane", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}
        if part in payee or part == "accountType":
            payee[part] = value
        else:
            payee["account"][part] = value
        response = post_json(api, url, {"amount": "1.00", "reference": "x", "payee": payee}, customer_auth)
        if not answered(response):
            unanswered.append((repr(value)[:40], response.status_code))

    assert unanswered == []


@pytest.mark.parametrize("field", TRANSFER_FIELDS)
def test_an_odd_value_in_any_transfer_field_is_answered(
    api, customer_auth, field, account, beneficiary, customer
):
    url = payments_url(customer.id, account.id, "international-transfers")
    unanswered = []

    for value in ODD_VALUES:
        body = {
            "quoteId": "6b1a3f4e-0000-4000-8000-000000000000",
            "reference": "x",
            "beneficiaryId": str(beneficiary.id),
        }
        if field == "payee":
            del body["beneficiaryId"]
        response = post_json(api, url, body | {field: value}, customer_auth)
        if not answered(response):
            unanswered.append((repr(value)[:40], response.status_code))

    assert unanswered == []


@pytest.mark.parametrize("parameter", FX_PARAMETERS)
def test_an_odd_fx_query_parameter_is_answered(api, customer_auth, parameter, account):
    url = f"/v1/accounts/{account.id}/fx/quote"
    # Query strings carry text; a lone surrogate can only be sent as its UTF-8 bytes.
    texts = [
        value
        for value in ODD_VALUES
        if isinstance(value, str) and not any("\ud800" <= char <= "\udfff" for char in value)
    ]
    texts += ["9" * 5000, "0." + "0" * 5000 + "1", "9999-12-31", "0001-01-01"]
    unanswered = []

    for value in texts:
        for amount_currency in ("GBP", "EUR"):
            query = {"currencyOne": "GBP", "currencyTwo": "EUR", "amountCurrency": amount_currency}
            response = api.get(url, query | {"amount": "10", parameter: value}, **customer_auth)
            if not answered(response):
                unanswered.append((repr(value)[:40], amount_currency, response.status_code))
    for raw in ("%ED%A0%80", "%00", "%FF"):
        response = api.get(f"{url}?{parameter}={raw}", **customer_auth)
        if not answered(response):
            unanswered.append((raw, response.status_code))

    assert unanswered == []


@pytest.mark.parametrize("body", ["null", "[]", "1", '"x"', "true", "{}", '{"amount": 1e999}'])
@pytest.mark.parametrize("route", ["payments", "international-transfers"])
def test_a_body_that_is_not_an_object_of_fields_is_a_400(api, customer_auth, route, body, account, customer):
    url = payments_url(customer.id, account.id, route)

    response = api.post(url, body, content_type="application/json", **customer_auth)

    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    "identifier",
    ["x", "%00", "%ED%A0%80", "\u0660" * 32, "0" * 5000, "{00000000-0000-0000-0000-000000000000}"],
)
def test_an_odd_identifier_in_a_path_is_not_found(api, customer_auth, identifier, account, customer):
    customer, account = str(customer.id), str(account.id)
    requests = [
        ("get", payments_url(identifier, account, "payment-requests")),
        ("get", payments_url(customer, identifier, "transactions")),
        ("get", payments_url(customer, identifier, "scheduled-payments")),
        ("post", payments_url(customer, identifier, "payments")),
        ("post", payments_url(identifier, account, "international-transfers")),
        ("delete", payments_url(customer, account, f"scheduled-payments/{identifier}")),
        ("get", f"/v1/accounts/{identifier}/fx/quote?currencyOne=GBP&currencyTwo=EUR&amount=1"),
        ("post", f"/v1/sandbox/payment-requests/{identifier}/settle"),
        ("post", f"/v1/sandbox/payment-requests/{identifier}/fail"),
    ]

    answers = {url: getattr(api, method)(url, **customer_auth) for method, url in requests}

    assert {url: r.status_code for url, r in answers.items()} == {url: 404 for url in answers}
    assert PaymentRequest.objects.count() == 0


def test_an_odd_failure_reason_in_the_sandbox_is_answered(api, customer_auth, account, beneficiary, customer):
    unanswered = []

    for value in ODD_VALUES:
        paid = post_json(
            api,
            payments_url(customer.id, account.id),
            {"amount": "1.00", "reference": "x", "beneficiaryId": str(beneficiary.id)},
            customer_auth,
        )
        request_id = paid.json()["data"]["bankTransfer"]["requestId"]
        response = post_json(
            api, f"/v1/sandbox/payment-requests/{request_id}/fail", {"reason": value}, customer_auth
        )
        if not answered(response):
            unanswered.append((repr(value)[:40], response.status_code))

    assert unanswered == []
