"""Batch items are checked with the payment routes' IBAN and BIC rules: an item
whose payee IBAN or BIC no bank would take is invalid, with the reason."""

import pytest

from tests.batches.conftest import URL, payment, verify
from tests.payments.test_bank_codes import BAD_IBANS, COMMERZBANK_IBAN

pytestmark = pytest.mark.django_db


def iban_payee(iban: str, bic: str | None = None) -> dict:
    account = {"type": "iban", "iban": iban} | ({"bic": bic} if bic else {})
    return {"name": "Hans Payee", "account": account}


def draft_of(api, auth, payments) -> dict:
    draft_id = verify(api, auth, payments)
    return api.get(f"{URL}/{draft_id}", **auth).json()["data"]["draft"]


def test_items_paying_ibans_no_bank_would_take_are_invalid_with_the_reason(
    api, custodian_auth, custodian_accounts
):
    payer = custodian_accounts[0]
    payments = [payment(payer, payee=iban_payee(iban)) for iban in BAD_IBANS]
    payments.append(payment(payer, payee=iban_payee(COMMERZBANK_IBAN, "COBADEFFXXX")))

    draft = draft_of(api, custodian_auth, payments)

    assert [entry["index"] for entry in draft["validPayments"]] == [len(BAD_IBANS)]
    reasons = {entry["index"]: entry["reasons"] for entry in draft["invalidPayments"]}
    assert reasons == {
        index: [f"payee.account.iban: {reason}"] for index, reason in enumerate(BAD_IBANS.values())
    }


@pytest.mark.parametrize(
    ("bic", "reason"),
    [
        ("DEUTXXFF", "XX (its 5th and 6th characters) is not a country code."),
        ("DEUTDEFF", "Is not the bank of the IBAN: the DE bank registry gives COBADEFF for its bank code."),
    ],
)
def test_an_item_with_a_bic_of_no_country_or_not_the_ibans_bank_is_invalid(
    api, custodian_auth, custodian_accounts, bic, reason
):
    draft = draft_of(
        api, custodian_auth, [payment(custodian_accounts[0], payee=iban_payee(COMMERZBANK_IBAN, bic))]
    )

    assert draft["validPayments"] == []
    assert draft["invalidPayments"][0]["reasons"] == [f"payee.account.bic: {reason}"]


def test_initiate_counts_only_items_whose_ibans_a_bank_would_take(api, custodian_auth, custodian_accounts):
    payer = custodian_accounts[0]
    payments = [
        payment(payer, "7.00", payee=iban_payee("DE5137040044053201300")),
        payment(payer, "3.00", payee=iban_payee(COMMERZBANK_IBAN, "cobadeff")),
    ]

    response = api.post(URL, {"action": "initiate", "payments": payments}, format="json", **custodian_auth)

    assert response.status_code == 200, response.json()
    assert response.json()["data"]["totalAmount"] == "3.00"
