"""International transfers and crypto-funded payments, converted through an FX quote:
the quote is spent with the acceptance, in one transaction."""

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from bankapi.models import Program
from payments.ledger import system_account_for
from payments.models import FxQuote, LedgerPosting, PaymentRequest, SystemAccount
from payments.payees import IbanAccount, payee_of
from payments.services.settlement import payment_fail, payment_settle
from tests.payments.conftest import balance, payments_url
from tests.support.auth import id_header

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")


def quote(api, auth, account, amount="100.00", one="GBP", two="EUR", amount_currency=None) -> dict:
    response = api.get(
        f"/v1/accounts/{account.id}/fx/quote",
        {"currencyOne": one, "currencyTwo": two, "amountCurrency": amount_currency or one, "amount": amount},
        **auth,
    )
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def transfer(api, auth, account, beneficiary, quote_id, key=None, **fields):
    body = {
        "quoteId": str(quote_id),
        "beneficiaryId": str(beneficiary.id),
        "reference": "Tuition",
    }
    body = {name: value for name, value in (body | fields).items() if value is not None}
    headers = {"HTTP_IDEMPOTENCY_KEY": str(key)} if key else {}
    return api.post(
        payments_url(account.customer_id, account.id, "international-transfers"),
        body,
        format="json",
        **headers,
        **auth,
    )


def position(account, kind, currency) -> Decimal:
    system = system_account_for(account.program_id, account.sandbox, kind, currency)
    return sum((p.amount for p in LedgerPosting.objects.filter(system_account=system)), Decimal("0"))


def test_a_transfer_pays_the_quotes_buy_amount_and_debits_its_sell_amount(
    api, customer_auth, account, beneficiary
):
    given = quote(api, customer_auth, account, "100.00")
    stored = FxQuote.objects.get(id=given["quoteId"])
    bought = stored.price

    response = transfer(
        api, customer_auth, account, beneficiary, given["quoteId"], purpose="EDUC", chargeBearer="SHA"
    )

    assert response.status_code == 200, response.json()
    data = response.json()["data"]["internationalTransfer"]
    assert data == {
        "status": "success",
        "requestId": data["requestId"],
        "quoteId": given["quoteId"],
        "sellAmount": "100.00",
        "sellCurrency": "GBP",
        "buyAmount": f"{bought:.2f}",
        "buyCurrency": "EUR",
        "rate": str(stored.rate.normalize()),
    }
    request = PaymentRequest.objects.get(id=data["requestId"])
    assert (request.amount, request.currency, request.debit_amount, request.status) == (
        bought,
        "EUR",
        Decimal("100.00"),
        "PENDING",
    )
    assert balance(account) == Decimal("99900.00")
    assert position(account, SystemAccount.Kind.FX, "GBP") == Decimal("100.00")
    assert position(account, SystemAccount.Kind.FX, "EUR") == -bought
    assert position(account, SystemAccount.Kind.CLEARING, "EUR") == bought
    stored.refresh_from_db()
    assert stored.used_at is not None
    listed = api.get(payments_url(account.customer_id, account.id, "payment-requests"), **customer_auth)
    assert listed.json()["data"]["paymentRequests"][0]["currency"] == "EUR"


def test_a_quote_fixed_on_the_buy_side_debits_the_converted_sell_amount(
    api, customer_auth, account, beneficiary
):
    given = quote(api, customer_auth, account, "50.00", amount_currency="EUR")
    sell = FxQuote.objects.get(id=given["quoteId"]).price

    response = transfer(api, customer_auth, account, beneficiary, given["quoteId"])

    data = response.json()["data"]["internationalTransfer"]
    assert (data["buyAmount"], data["sellAmount"]) == ("50.00", f"{sell:.2f}")
    assert balance(account) == Decimal("100000.00") - sell


def test_settling_a_transfer_pays_out_in_the_buy_currency_and_books_the_sell_amount(
    api, customer_auth, account, beneficiary
):
    given = quote(api, customer_auth, account, "80.00")
    request = PaymentRequest.objects.get(
        id=transfer(api, customer_auth, account, beneficiary, given["quoteId"]).json()["data"][
            "internationalTransfer"
        ]["requestId"]
    )
    paid_out = position(account, SystemAccount.Kind.EXTERNAL, "EUR")

    payment_settle(request)

    assert position(account, SystemAccount.Kind.CLEARING, "EUR") == Decimal("0")
    assert position(account, SystemAccount.Kind.EXTERNAL, "EUR") - paid_out == request.amount
    booked = api.get(payments_url(account.customer_id, account.id, "transactions"), **customer_auth)
    latest = booked.json()["data"]["transactions"][0]
    assert (latest["direction"], latest["amount"], latest["currency"]) == ("DEBIT", "80.00", "GBP")


def test_a_failed_transfer_is_reversed_at_the_quoted_amounts(api, customer_auth, account, beneficiary):
    given = quote(api, customer_auth, account, "80.00")
    request_id = transfer(api, customer_auth, account, beneficiary, given["quoteId"]).json()["data"][
        "internationalTransfer"
    ]["requestId"]

    payment_fail(PaymentRequest.objects.get(id=request_id), "Beneficiary bank rejected it")

    assert balance(account) == Decimal("100000.00")
    for currency in ("GBP", "EUR"):
        assert position(account, SystemAccount.Kind.FX, currency) == Decimal("0")
    assert position(account, SystemAccount.Kind.CLEARING, "EUR") == Decimal("0")


def test_a_used_quote_is_refused(api, customer_auth, account, snapshot, beneficiary):
    given = quote(api, customer_auth, account)
    transfer(api, customer_auth, account, beneficiary, given["quoteId"])
    before = snapshot()

    response = transfer(api, customer_auth, account, beneficiary, given["quoteId"])

    assert (response.status_code, response.json()["code"]) == (422, "QUOTE_ALREADY_USED")
    assert before.unchanged()


def test_an_expired_quote_is_refused(api, customer_auth, account, snapshot, time_machine, beneficiary):
    given = quote(api, customer_auth, account)
    time_machine.move_to(timezone.now() + timedelta(seconds=31))
    before = snapshot()

    response = transfer(api, customer_auth, account, beneficiary, given["quoteId"])

    assert (response.status_code, response.json()["code"]) == (422, "QUOTE_EXPIRED")
    assert before.unchanged()


def test_another_customers_or_an_unknown_quote_is_not_found(
    api, customer_auth, customer2_auth, account, snapshot, customer2_account, beneficiary
):
    theirs = quote(api, customer2_auth, customer2_account)
    before = snapshot()

    responses = [
        transfer(api, customer_auth, account, beneficiary, theirs["quoteId"]),
        transfer(api, customer_auth, account, beneficiary, uuid.uuid4()),
    ]

    assert [r.status_code for r in responses] == [404, 404]
    assert before.unchanged()


def test_a_refused_transfer_leaves_the_quote_usable(api, customer_auth, low_account, beneficiary):
    low = low_account
    given = quote(api, customer_auth, low, "5.00")

    blank = transfer(api, customer_auth, low, beneficiary, given["quoteId"], reference="")
    Program.objects.filter(id=low.program_id).update(fee_per_payment=Decimal("0.01"))
    poor = transfer(api, customer_auth, low, beneficiary, given["quoteId"])
    Program.objects.filter(id=low.program_id).update(fee_per_payment=Decimal("0.00"))
    paid = transfer(api, customer_auth, low, beneficiary, given["quoteId"])

    assert blank.status_code == 400
    assert (poor.status_code, poor.json()["code"]) == (422, "INSUFFICIENT_FUNDS")
    assert paid.status_code == 200
    assert balance(low) == Decimal("0.00")


def test_limits_apply_to_the_amount_debited(api, customer_auth, account, snapshot, beneficiary):
    given = quote(api, customer_auth, account, "25000.01")
    before = snapshot()

    response = transfer(api, customer_auth, account, beneficiary, given["quoteId"])

    assert (response.status_code, response.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert before.unchanged()


def test_a_quote_selling_another_currency_is_a_400(api, customer_auth, account, snapshot, beneficiary):
    given = quote(api, customer_auth, account, one="EUR", two="GBP")
    before = snapshot()

    response = transfer(api, customer_auth, account, beneficiary, given["quoteId"])

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "quoteId"
    assert before.unchanged()
    assert FxQuote.objects.get(id=given["quoteId"]).used_at is None


def test_a_program_whose_fx_was_turned_off_cannot_transfer(
    api, customer_auth, account, snapshot, beneficiary
):
    given = quote(api, customer_auth, account)
    Program.objects.filter(id=account.program_id).update(international_payments_enabled=False)
    before = snapshot()

    response = transfer(api, customer_auth, account, beneficiary, given["quoteId"])

    assert (response.status_code, response.json()["code"]) == (422, "PROVIDER_ERROR")
    assert before.unchanged()


def test_a_retried_transfer_with_the_same_key_is_replayed(api, customer_auth, account, beneficiary):
    given, other = quote(api, customer_auth, account), quote(api, customer_auth, account)
    key = uuid.uuid4()

    first = transfer(api, customer_auth, account, beneficiary, given["quoteId"], key)
    retry = transfer(api, customer_auth, account, beneficiary, given["quoteId"], key)
    mismatch = transfer(api, customer_auth, account, beneficiary, other["quoteId"], key)

    assert retry.json() == first.json() and retry["Idempotent-Replayed"] == "true"
    assert (mismatch.status_code, mismatch.json()["code"]) == (400, "IDEMPOTENCY_KEY_MISMATCH")
    assert PaymentRequest.objects.count() == 1


PAYEE = {"name": "Hans", "account": {"type": "iban", "iban": "DE89370400440532013000"}}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"quoteId": None}, "quoteId"),
        ({"quoteId": "nope"}, "quoteId"),
        ({"quoteId": 5}, "quoteId"),
        ({"beneficiaryId": None}, "beneficiaryId"),
        ({"payee": PAYEE}, "beneficiaryId"),
        ({"beneficiaryId": None, "payee": {"name": "Hans"}}, "payee.account"),
        ({"reference": None}, "reference"),
        ({"reference": "x" * 141}, "reference"),
        ({"purpose": ""}, "purpose"),
        ({"chargeBearer": "ME"}, "chargeBearer"),
        ({"idempotencyKey": "k"}, "idempotencyKey"),
        ({"programId": str(uuid.uuid4())}, "programId"),
    ],
)
def test_bad_transfer_input_is_a_400_and_changes_nothing(
    api, customer_auth, account, snapshot, fields, field, beneficiary
):
    given = quote(api, customer_auth, account)
    before = snapshot()
    body = {
        "quoteId": given["quoteId"],
        "beneficiaryId": str(beneficiary.id),
        "reference": "Ref",
    }
    body = {name: value for name, value in (body | fields).items() if value is not None}

    response = api.post(
        payments_url(account.customer_id, account.id, "international-transfers"),
        body,
        format="json",
        **customer_auth,
    )

    assert response.status_code == 400, response.json()
    assert field in [error["field"] for error in response.json()["errors"]]
    assert before.unchanged()
    assert FxQuote.objects.get(id=given["quoteId"]).used_at is None


def test_an_inline_payee_can_be_paid_internationally(api, customer_auth, account, beneficiary):
    given = quote(api, customer_auth, account)

    response = transfer(
        api, customer_auth, account, beneficiary, given["quoteId"], beneficiaryId=None, payee=PAYEE
    )

    assert response.status_code == 200
    assert payee_of(PaymentRequest.objects.get().payee).account == IbanAccount(iban="DE89370400440532013000")


def test_outsiders_and_wrong_tokens_cannot_transfer(
    api, customer_auth, customer2_auth, business_auth, account, beneficiary, payer, program
):
    given = quote(api, customer_auth, account)
    url = payments_url(account.customer_id, account.id, "international-transfers")
    body = {
        "quoteId": given["quoteId"],
        "beneficiaryId": str(beneficiary.id),
        "reference": "Ref",
    }

    responses = [
        api.post(url, body, format="json", **customer2_auth),
        api.post(url, body, format="json", **business_auth),
        api.post(url, body, format="json"),
        api.post(url, body, format="json", **id_header(payer.email, payer.program_id)),
    ]

    assert [r.status_code for r in responses] == [404, 404, 401, 401]
    assert PaymentRequest.objects.count() == 0


def crypto_payment(api, auth, account, quote_id, **fields):
    body = {
        "amount": "117.00",
        "reference": "Crypto top-up",
        "cryptoQuote": {"quoteId": str(quote_id)},
    } | fields
    return api.post(payments_url(account.customer_id, account.id), body, format="json", **auth)


def test_a_crypto_funded_payment_is_paid_through_its_quote(api, customer_auth, account):
    given = quote(api, customer_auth, account, "100.00", two="USD")
    bought = FxQuote.objects.get(id=given["quoteId"]).price

    response = crypto_payment(
        api, customer_auth, account, given["quoteId"], amount=f"{bought:.2f}", currency="USD"
    )

    assert response.status_code == 200, response.json()
    request = PaymentRequest.objects.get(id=response.json()["data"]["bankTransfer"]["requestId"])
    assert (request.amount, request.currency, request.debit_amount, request.payee) == (
        bought,
        "USD",
        Decimal("100.00"),
        None,
    )
    assert balance(account) == Decimal("99900.00")


@pytest.mark.parametrize(
    ("fields", "field"), [({"amount": "1.00"}, "amount"), ({"currency": "EUR"}, "currency")]
)
def test_a_crypto_funded_payment_must_match_its_quote(api, customer_auth, account, snapshot, fields, field):
    given = quote(api, customer_auth, account, "100.00", two="USD")
    bought = FxQuote.objects.get(id=given["quoteId"]).price
    before = snapshot()

    response = crypto_payment(
        api, customer_auth, account, given["quoteId"], **({"amount": f"{bought:.2f}"} | fields)
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field
    assert before.unchanged()
    assert FxQuote.objects.get(id=given["quoteId"]).used_at is None


@pytest.mark.parametrize(
    "rate, shown",
    [("190.000000", "190"), ("10", "10"), ("1.234500", "1.2345"), ("0.000100", "0.0001")],
)
def test_a_rate_is_written_as_plain_decimal_digits(rate, shown):
    from payments.fields import RateField

    assert RateField().to_representation(Decimal(rate)) == shown
