"""IBANs, BICs and currencies are read as a bank reads them, wherever they are read.

An IBAN needs a country that issues IBANs, that country's length and account
format, and right mod-97 check digits; a BIC 8 or 11 characters with a real
country and, where the IBAN's country has a bank registry, that bank; a currency
an ISO 4217 code with 2 decimal places. Each example below passed mod-97 or the
old shape checks and was accepted for payments before.
"""

import pytest
from django.core.exceptions import ValidationError

from bankapi.codes import bic_problem, currency_problem, iban_problem
from payments.models import Beneficiary, PaymentRequest
from payments.payees import IbanAccount, payee_of
from tests.payments.conftest import payments_url

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")

# Each passes mod-97 (or is refused by nothing but the country's rules).
BAD_IBANS = {
    "DE5137040044053201300": "A DE IBAN has 22 characters; this one has 21.",
    "DE2537040044ABCDEFGH00": (
        "A DE IBAN has 2 check digits, then 8 digits, then 10 digits; this one does not."
    ),
    "XX4610000000000001": "XX is not a country whose banks issue IBANs.",
    "GB88WEST1234569876543": "A GB IBAN has 22 characters; this one has 21.",
    "NO37860111179470": "A NO IBAN has 15 characters; this one has 16.",
}
GOOD_IBANS = [
    "DE89370400440532013000",
    "GB82WEST12345698765432",
    "gb82 west 1234 5698 7654 32",
    "NO9386011117947",
]
# Commerzbank Köln: the German registry lists COBADEFFXXX for bank code 37040044.
COMMERZBANK_IBAN = "DE89370400440532013000"


def test_the_bad_ibans_pass_mod_97_so_only_the_country_rules_refuse_them():
    def mod_97(iban: str) -> int:
        rearranged = iban[4:] + iban[:4]
        return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97

    assert [mod_97(iban) for iban in BAD_IBANS] == [1] * len(BAD_IBANS)


@pytest.mark.parametrize(("iban", "reason"), BAD_IBANS.items())
def test_an_iban_no_bank_would_take_has_a_reason(iban, reason):
    assert iban_problem(iban) == reason


@pytest.mark.parametrize("iban", GOOD_IBANS)
def test_a_real_iban_has_no_problem(iban):
    assert iban_problem(iban) is None


@pytest.mark.parametrize(
    ("bic", "iban", "problem"),
    [
        ("DEUTXXFF", None, "XX (its 5th and 6th characters) is not a country code."),
        ("DEUTDEF", None, "Must be a BIC of 8 or 11"),
        ("DEUTDEFF\n", None, "Must be a BIC of 8 or 11"),
        (
            "DEUTDEFF",
            COMMERZBANK_IBAN,
            "Is not the bank of the IBAN: the DE bank registry gives COBADEFF for its bank code.",
        ),
        ("DEUTDEFF500", COMMERZBANK_IBAN, "Is not the bank of the IBAN"),
    ],
)
def test_a_bic_with_no_real_country_or_not_the_ibans_bank_has_a_reason(bic, iban, problem):
    assert (bic_problem(bic, iban) or "").startswith(problem)


@pytest.mark.parametrize(
    ("bic", "iban"),
    [
        ("DEUTDEFF", None),
        ("COBADEFFXXX", COMMERZBANK_IBAN),
        ("cobadeff", COMMERZBANK_IBAN),
        ("COBADEFF370", COMMERZBANK_IBAN),
        # No registry entry for this bank code: nothing to match against.
        ("NWBKGB2L", "GB82WEST12345698765432"),
    ],
)
def test_a_bic_of_a_real_country_and_of_the_ibans_bank_has_no_problem(bic, iban):
    assert bic_problem(bic, iban) is None


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("JPY", "JPY has 0 decimal places; only currencies with 2 (such as GBP, EUR or USD) are supported."),
        ("KWD", "KWD has 3 decimal places; only currencies with 2 (such as GBP, EUR or USD) are supported."),
        ("XAU", "XAU is not a currency an account can hold."),
        ("ABC", "ABC is not an ISO 4217 currency code."),
        ("gbp", "Must be an ISO 4217 currency code: three capital letters, e.g. GBP."),
        ("GBP\n", "Must be an ISO 4217 currency code: three capital letters, e.g. GBP."),
    ],
)
def test_a_currency_without_2_decimal_places_or_outside_iso_4217_has_a_reason(code, problem):
    assert currency_problem(code) == problem


@pytest.mark.parametrize("code", ["GBP", "EUR", "USD", "CHF"])
def test_a_currency_with_2_decimal_places_has_no_problem(code):
    assert currency_problem(code) is None


# Through the routes: a payment, an international transfer and a quote.


def pay(api, auth, account, payee_account, **fields):
    body = {
        "amount": "10.00",
        "reference": "Invoice 42",
        "payee": {"name": "Hans Muster", "account": payee_account},
    } | fields
    return api.post(payments_url(account.customer_id, account.id), body, format="json", **auth)


def assert_refused(response, field: str, reason: str | None = None) -> None:
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    messages = {error["field"]: error["message"] for error in body["errors"]}
    assert field in messages, body
    if reason is not None:
        assert messages[field] == reason


@pytest.mark.parametrize(("iban", "reason"), BAD_IBANS.items())
def test_a_payment_to_an_iban_no_bank_would_take_is_refused(
    api, customer_auth, account, snapshot, iban, reason
):
    before = snapshot()

    response = pay(api, customer_auth, account, {"type": "iban", "iban": iban})

    assert_refused(response, "payee.account.iban", reason)
    assert before.unchanged()


@pytest.mark.parametrize(
    ("bic", "iban"),
    [("DEUTXXFF", COMMERZBANK_IBAN), ("DEUTDEFF", COMMERZBANK_IBAN), ("XYZ", COMMERZBANK_IBAN)],
)
def test_a_payment_with_a_bic_of_no_country_or_another_bank_is_refused(
    api, customer_auth, account, snapshot, bic, iban
):
    before = snapshot()

    response = pay(api, customer_auth, account, {"type": "iban", "iban": iban, "bic": bic})

    assert_refused(response, "payee.account.bic")
    assert before.unchanged()


def test_a_payment_to_a_real_iban_with_its_banks_bic_is_accepted(api, customer_auth, account):
    response = pay(
        api,
        customer_auth,
        account,
        {"type": "iban", "iban": "de89 3704 0044 0532 0130 00", "bic": "cobadeff"},
    )

    assert response.status_code == 200, response.json()
    assert payee_of(PaymentRequest.objects.get().payee).account == IbanAccount(
        iban=COMMERZBANK_IBAN, bic="COBADEFF"
    )


@pytest.mark.parametrize("virtual_iban", list(BAD_IBANS))
def test_a_virtual_iban_no_bank_would_take_is_refused(
    api, customer_auth, account, snapshot, virtual_iban, beneficiary
):
    before = snapshot()

    response = api.post(
        payments_url(account.customer_id, account.id),
        {
            "amount": "10.00",
            "reference": "Invoice 42",
            "beneficiaryId": str(beneficiary.id),
            "virtualIban": virtual_iban,
        },
        format="json",
        **customer_auth,
    )

    assert_refused(response, "virtualIban", BAD_IBANS[virtual_iban])
    assert before.unchanged()


@pytest.mark.parametrize("currency", ["JPY", "KWD", "XAU", "ABC"])
def test_a_payment_in_a_currency_without_2_decimal_places_is_refused_naming_currency(
    api, customer_auth, account, snapshot, currency, beneficiary
):
    before = snapshot()

    response = api.post(
        payments_url(account.customer_id, account.id),
        {
            "amount": "10.00",
            "reference": "Invoice 42",
            "beneficiaryId": str(beneficiary.id),
            "currency": currency,
        },
        format="json",
        **customer_auth,
    )

    assert_refused(response, "currency", currency_problem(currency))
    assert before.unchanged()


@pytest.mark.parametrize(("iban", "reason"), BAD_IBANS.items())
def test_an_international_transfer_to_an_iban_no_bank_would_take_is_refused(
    api, customer_auth, account, snapshot, iban, reason
):
    before = snapshot()

    response = api.post(
        payments_url(account.customer_id, account.id, "international-transfers"),
        {
            "quoteId": "6b1a3f4e-5c2d-4e8f-9a0b-1c2d3e4f5a6b",
            "reference": "Tuition",
            "payee": {"name": "Hans", "account": {"type": "iban", "iban": iban, "bic": "DEUTXXFF"}},
        },
        format="json",
        **customer_auth,
    )

    assert_refused(response, "payee.account.iban", reason)
    assert_refused(response, "payee.account.bic")
    assert before.unchanged()


@pytest.mark.parametrize(
    ("parameter", "code"),
    [("currencyOne", "JPY"), ("currencyTwo", "KWD"), ("currencyTwo", "XAU"), ("amountCurrency", "ABC")],
)
def test_a_quote_in_a_currency_without_2_decimal_places_is_refused(
    api, customer_auth, account, parameter, code
):
    query = {"currencyOne": "GBP", "currencyTwo": "EUR", "amountCurrency": "GBP", "amount": "100.00"}

    response = api.get(f"/v1/accounts/{account.id}/fx/quote", query | {parameter: code}, **customer_auth)

    assert_refused(response, parameter, currency_problem(code))


# Saved beneficiaries (admin and bootstrap save them through model validation).


@pytest.mark.parametrize(("iban", "reason"), BAD_IBANS.items())
def test_a_beneficiary_with_an_iban_no_bank_would_take_is_invalid(customer, iban, reason):
    beneficiary = Beneficiary(customer=customer, name="Landlord", account_kind="iban", iban=iban)

    with pytest.raises(ValidationError) as refused:
        beneficiary.full_clean()

    assert refused.value.message_dict["iban"] == [reason]


@pytest.mark.parametrize("bic", ["DEUTXXFF", "DEUTDEFF"])
def test_a_beneficiary_with_a_bic_of_no_country_or_another_bank_is_invalid(customer, bic):
    beneficiary = Beneficiary(
        customer=customer, name="Landlord", account_kind="iban", iban=COMMERZBANK_IBAN, bic=bic
    )

    with pytest.raises(ValidationError) as refused:
        beneficiary.full_clean()

    assert "bic" in refused.value.message_dict and "iban" not in refused.value.message_dict
