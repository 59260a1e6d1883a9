"""Single-line free text of a payment: the inline payee's name, the reference, the
purpose and a sandbox failure reason take no control or format character (Unicode
Cc, Cf, Zl, Zp): 400 VALIDATION_ERROR naming the field, and nothing is paid."""

import pytest

from payments.models import PaymentRequest
from tests.payments.conftest import payments_url
from tests.support.single_line import LINE_BREAKING, with_inside

PAYEE = {"name": "Jane Payee", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}


def refused_naming(response, field: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert [error["field"] for error in body["errors"]] == [field], body
    assert "single line" in body["errors"][0]["message"]


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
@pytest.mark.parametrize(
    ("field", "body"),
    [
        (
            "payee.name",
            lambda c: {"reference": "Rent", "payee": {**PAYEE, "name": with_inside("Jane Payee", c)}},
        ),
        ("reference", lambda c: {"reference": with_inside("Rent May", c), "payee": PAYEE}),
        ("purpose", lambda c: {"reference": "Rent", "payee": PAYEE, "purpose": with_inside("SALA", c)}),
    ],
)
def test_a_payment_refuses_the_character_in_its_text(api, customer_auth, account, field, body, character):
    sent = {"amount": "1.00", **body(character)}

    response = api.post(payments_url(account.customer_id, account.id), sent, format="json", **customer_auth)

    refused_naming(response, field)
    assert not PaymentRequest.objects.filter(account=account).exists()


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
def test_a_sandbox_failure_reason_refuses_the_character(api, customer_auth, account, character):
    paid = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "1.00", "reference": "Rent", "payee": PAYEE},
        format="json",
        **customer_auth,
    )
    request_id = paid.json()["data"]["bankTransfer"]["requestId"]

    response = api.post(
        f"/v1/sandbox/payment-requests/{request_id}/fail",
        {"reason": with_inside("Closed account", character)},
        format="json",
        **customer_auth,
    )

    refused_naming(response, "reason")
    assert PaymentRequest.objects.get(id=request_id).status != PaymentRequest.Status.FAILED


def test_text_without_those_characters_is_paid_as_sent(api, customer_auth, account):
    """Letters of any script, accents and inner spaces are single-line text."""
    sent = {
        "amount": "1.00",
        "reference": "Łódź café 東京",
        "payee": {**PAYEE, "name": "Zoë O'Brien-Ünal"},
        "purpose": "SALA",
    }

    response = api.post(payments_url(account.customer_id, account.id), sent, format="json", **customer_auth)

    assert response.status_code == 200, response.content
    assert PaymentRequest.objects.get(account=account).reference == "Łódź café 東京"
