"""POST /v1/customers/{customerId}/accounts/{accountId}/payments."""

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine

from bankapi.models import Account, Program
from payments.ledger import system_account_for
from payments.models import LedgerPosting, PaymentRequest, SystemAccount
from payments.payees import UkAccount, payee_of
from payments.services.settlement import payment_fail
from tests.payments.conftest import balance, payments_url
from tests.support.auth import access_header, id_header
from tests.support.factories import BeneficiaryFactory, funded_account

# Quotes are priced from the starting rate table.
pytestmark = pytest.mark.usefixtures("fx_rates")


def pay(api, auth, account, **body):
    return api.post(payments_url(account.customer_id, account.id), body, format="json", **auth)


def body_for(beneficiary, /, **overrides):
    body = {
        "amount": "10.00",
        "reference": "Invoice 42",
        "beneficiaryId": str(beneficiary.id),
    }
    body.update(overrides)
    return {key: value for key, value in body.items() if value is not None}


def system_balance(account, kind, currency=None) -> Decimal:
    system = system_account_for(account.program_id, account.sandbox, kind, currency or account.currency)
    return sum((p.amount for p in LedgerPosting.objects.filter(system_account=system)), Decimal("0"))


def test_a_payment_to_a_saved_beneficiary_is_accepted_and_debited_at_once(
    api, customer_auth, account, beneficiary
):
    clearing_before = system_balance(account, SystemAccount.Kind.CLEARING)

    response = pay(api, customer_auth, account, **body_for(beneficiary, amount="12.34", purpose="RENT"))

    assert response.status_code == 200
    transfer = response.json()["data"]["bankTransfer"]
    assert response.json()["success"] is True
    assert set(transfer) == {"status", "requestId"} and transfer["status"] == "success"
    request = PaymentRequest.objects.get(id=transfer["requestId"])
    assert (request.status, request.amount, request.currency) == ("PENDING", Decimal("12.34"), "GBP")
    assert str(request.beneficiary_id) == str(beneficiary.id)
    assert payee_of(request.payee).account == UkAccount(sort_code="040004", account_number="12345678")
    assert request.purpose == "RENT"
    assert balance(account) == Decimal("99987.66")
    assert system_balance(account, SystemAccount.Kind.CLEARING) - clearing_before == Decimal("12.34")


@pytest.mark.parametrize(
    "payee",
    [
        {"name": "Jane Doe", "account": {"type": "uk", "sortCode": "20-00-00", "accountNumber": "55779911"}},
        {"name": "Hans Muster", "account": {"type": "iban", "iban": "DE89 3704 0044 0532 0130 00"}},
        {
            "name": "Acme GmbH",
            "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
            "accountType": "BUSINESS",
        },
    ],
)
def test_inline_payee_details_are_accepted_instead_of_a_beneficiary(
    api, customer_auth, account, payee, beneficiary
):
    response = pay(api, customer_auth, account, **body_for(beneficiary, beneficiaryId=None, payee=payee))

    assert response.status_code == 200, response.json()
    request = PaymentRequest.objects.get(id=response.json()["data"]["bankTransfer"]["requestId"])
    assert request.beneficiary is None
    paid = payee_of(request.payee)
    assert paid.name == payee["name"]
    assert paid.is_uk == (payee["account"]["type"] == "uk")
    assert paid.payee_type == payee.get("accountType", "")


def test_an_iban_beneficiary_can_be_paid_with_any_valid_virtual_iban(api, customer_auth, account, customer):
    beneficiary = BeneficiaryFactory(
        customer=customer, account_kind="iban", sort_code="", account_number="", iban="DE89370400440532013000"
    )

    response = pay(
        api,
        customer_auth,
        account,
        **body_for(beneficiary, beneficiaryId=str(beneficiary.id), virtualIban="DE89370400440532013000"),
    )

    assert response.status_code == 200
    assert PaymentRequest.objects.get(beneficiary=beneficiary).virtual_iban == "DE89370400440532013000"


def test_a_domestic_gbp_payment_takes_a_gb_virtual_iban(api, customer_auth, account, beneficiary):
    response = pay(
        api, customer_auth, account, **body_for(beneficiary, virtualIban="GB82 WEST 1234 5698 7654 32")
    )

    assert response.status_code == 200
    assert PaymentRequest.objects.get().virtual_iban == "GB82WEST12345698765432"


def test_currency_defaults_to_the_account_currency_and_may_be_sent(api, customer_auth, account, beneficiary):
    first = pay(api, customer_auth, account, **body_for(beneficiary))
    second = pay(api, customer_auth, account, **body_for(beneficiary, currency="GBP", chargeBearer="OUR"))

    assert first.status_code == second.status_code == 200
    assert list(PaymentRequest.objects.values_list("currency", flat=True)) == ["GBP", "GBP"]
    assert PaymentRequest.objects.filter(charge_bearer="OUR").count() == 1


def test_a_payment_at_the_review_threshold_is_held_for_compliance(api, customer_auth, account, beneficiary):
    below = pay(api, customer_auth, account, **body_for(beneficiary, amount="9999.99"))
    at = pay(api, customer_auth, account, **body_for(beneficiary, amount="10000.00"))

    assert below.status_code == at.status_code == 200
    statuses = {str(request.amount): request.status for request in PaymentRequest.objects.all()}
    assert statuses == {"9999.99": "PENDING", "10000.00": "PENDING_TM"}
    assert balance(account) == Decimal("100000.00") - Decimal("19999.99")


def test_over_the_per_payment_limit_is_refused_before_the_funds_check(
    api, customer_auth, snapshot, low_account, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, low_account, **body_for(beneficiary, amount="25000.01"))

    assert response.status_code == 422
    assert response.json()["code"] == "LIMIT_EXCEEDED"
    assert before.unchanged()


def test_the_daily_outbound_limit_counts_todays_standing_payments_of_the_account(
    api, customer_auth, account, beneficiary
):
    Program.objects.filter(id=account.program_id).update(daily_outbound_limit=Decimal("100.00"))
    assert pay(api, customer_auth, account, **body_for(beneficiary, amount="60.00")).status_code == 200

    over = pay(api, customer_auth, account, **body_for(beneficiary, amount="40.01"))
    exact = pay(api, customer_auth, account, **body_for(beneficiary, amount="40.00"))

    assert (over.status_code, over.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert exact.status_code == 200
    assert balance(account) == Decimal("99900.00")


def test_failed_payments_and_yesterdays_do_not_count_towards_the_daily_limit(
    api, customer_auth, account, beneficiary, payer, program
):
    Program.objects.filter(id=account.program_id).update(daily_outbound_limit=Decimal("100.00"))
    with time_machine.travel(datetime.now(UTC) - timedelta(days=1)):
        yesterday_auth = access_header(payer.email, payer.program_id)
        assert pay(api, yesterday_auth, account, **body_for(beneficiary, amount="100.00")).status_code == 200
    failed = pay(api, customer_auth, account, **body_for(beneficiary, amount="100.00"))
    payment_fail(
        PaymentRequest.objects.get(id=failed.json()["data"]["bankTransfer"]["requestId"]), "Returned"
    )

    again = pay(api, customer_auth, account, **body_for(beneficiary, amount="100.00"))

    assert again.status_code == 200


def test_insufficient_funds_is_refused_and_nothing_is_written(
    api, customer_auth, snapshot, low_account, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, low_account, **body_for(beneficiary, amount="5.01"))

    assert response.status_code == 422
    assert response.json()["code"] == "INSUFFICIENT_FUNDS"
    assert before.unchanged()


def test_the_fee_is_charged_with_the_amount_and_counts_in_the_funds_check(
    api, customer_auth, customer, beneficiary
):
    Program.objects.filter(id=customer.program_id).update(fee_per_payment=Decimal("1.00"))
    account = funded_account(customer, "5.00")

    refused = pay(api, customer_auth, account, **body_for(beneficiary, amount="4.50"))
    accepted = pay(api, customer_auth, account, **body_for(beneficiary, amount="4.00"))

    assert (refused.status_code, refused.json()["code"]) == (422, "INSUFFICIENT_FUNDS")
    assert accepted.status_code == 200
    assert balance(account) == Decimal("0.00")
    assert PaymentRequest.objects.get(account=account).fee == Decimal("1.00")
    assert system_balance(account, SystemAccount.Kind.FEES) == Decimal("1.00")


def test_fee_waived_sends_the_payment_without_the_fee(api, customer_auth, customer, beneficiary):
    Program.objects.filter(id=customer.program_id).update(fee_per_payment=Decimal("1.00"))
    account = funded_account(customer, "5.00")

    response = pay(api, customer_auth, account, **body_for(beneficiary, amount="5.00", feeWaived=True))

    assert response.status_code == 200
    request = PaymentRequest.objects.get(account=account)
    assert (request.fee, request.fee_waived) == (Decimal("0.00"), True)
    assert balance(account) == Decimal("0.00")


def test_fee_waived_on_a_program_that_disallows_it_is_not_supported(
    api, customer_auth, account, snapshot, beneficiary
):
    Program.objects.filter(id=account.program_id).update(fee_waiver_allowed=False)
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, feeWaived=True))

    assert (response.status_code, response.json()["code"]) == (422, "NOT_SUPPORTED")
    assert before.unchanged()


def test_an_account_with_a_short_reference_limit_refuses_longer_references(
    api, customer_auth, snapshot, short_reference_account, beneficiary
):
    short = short_reference_account
    before = snapshot()

    refused = pay(api, customer_auth, short, **body_for(beneficiary, reference="x" * 36))

    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "reference"
    assert before.unchanged()
    assert pay(api, customer_auth, short, **body_for(beneficiary, reference="x" * 35)).status_code == 200


def test_an_account_with_the_swift_charset_refuses_other_characters(
    api, customer_auth, customer, beneficiary
):
    account = funded_account(
        customer, "10.00", reference_charset=Account.ReferenceCharset.SWIFT, reference_min=3
    )

    assert (
        pay(api, customer_auth, account, **body_for(beneficiary, reference="Rent & bills")).status_code == 400
    )
    assert pay(api, customer_auth, account, **body_for(beneficiary, reference="ab")).status_code == 400
    assert (
        pay(api, customer_auth, account, **body_for(beneficiary, reference="Rent/2026-01")).status_code == 200
    )


@pytest.mark.parametrize("when", ["today", "yesterday", "today-late", "today-offset"])
def test_a_scheduled_date_of_today_or_earlier_pays_at_once(api, account, when, beneficiary, payer, program):
    with time_machine.travel(datetime(2026, 3, 10, 23, 30, tzinfo=UTC), tick=False):
        customer_auth = access_header(payer.email, payer.program_id)
        value = {
            "today": "2026-03-10",
            "yesterday": "2026-03-09",
            "today-late": "2026-03-10T23:59:59Z",
            # 01:00 on the 11th in UTC+02:00 is 23:00 on the 10th in UTC.
            "today-offset": "2026-03-11T01:00:00+02:00",
        }[when]

        response = pay(api, customer_auth, account, **body_for(beneficiary, scheduledDate=value))

    assert response.status_code == 200
    assert "requestId" in response.json()["data"]["bankTransfer"]
    assert PaymentRequest.objects.count() == 1


def test_a_program_that_requires_idempotency_keys_refuses_a_create_without_one(
    api, customer_auth, account, snapshot, beneficiary
):
    Program.objects.filter(id=account.program_id).update(require_idempotency_key=True)
    before = snapshot()

    refused = pay(api, customer_auth, account, **body_for(beneficiary))

    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "Idempotency-Key"
    assert before.unchanged()
    with_header = api.post(
        payments_url(account.customer_id, account.id),
        body_for(beneficiary),
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **customer_auth,
    )
    with_body = pay(api, customer_auth, account, **body_for(beneficiary, idempotencyKey=str(uuid.uuid4())))
    assert with_header.status_code == with_body.status_code == 200


UK_PAYEE = {"name": "Jane", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}

BAD_BODIES = [
    ("amount", {"amount": 10}),
    ("amount", {"amount": 10.5}),
    ("amount", {"amount": "10.001"}),
    ("amount", {"amount": "-1.00"}),
    ("amount", {"amount": "0"}),
    ("amount", {"amount": "0.00"}),
    ("amount", {"amount": "1e3"}),
    ("amount", {"amount": " 10.00"}),
    ("amount", {"amount": "10."}),
    ("amount", {"amount": ""}),
    ("amount", {"amount": None}),
    ("amount", {"amount": "12345678901234567.00"}),
    ("currency", {"currency": "gbp"}),
    ("currency", {"currency": "GBPX"}),
    ("currency", {"currency": 826}),
    ("currency", {"currency": "EUR"}),
    ("reference", {"reference": ""}),
    ("reference", {"reference": "x" * 141}),
    ("reference", {"reference": 42}),
    ("reference", {"reference": "line\nbreak"}),
    ("purpose", {"purpose": ""}),
    ("purpose", {"purpose": 7}),
    ("beneficiaryId", {"beneficiaryId": 42}),
    ("beneficiaryId", {"beneficiaryId": ""}),
    ("beneficiaryId", {"payee": UK_PAYEE}),
    (
        "payee.account.sortCode",
        {
            "beneficiaryId": None,
            "payee": {
                **UK_PAYEE,
                "account": {"type": "uk", "sortCode": "12345", "accountNumber": "55779911"},
            },
        },
    ),
    (
        "payee.account.accountNumber",
        {
            "beneficiaryId": None,
            "payee": {
                **UK_PAYEE,
                "account": {"type": "uk", "sortCode": "200000", "accountNumber": "5577991"},
            },
        },
    ),
    (
        "payee.account.iban",
        {
            "beneficiaryId": None,
            "payee": {**UK_PAYEE, "account": {"type": "iban", "iban": "DE89370400440532013001"}},
        },
    ),
    (
        "payee.account.bic",
        {
            "beneficiaryId": None,
            "payee": {**UK_PAYEE, "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "X"}},
        },
    ),
    ("payee.name", {"beneficiaryId": None, "payee": {"account": UK_PAYEE["account"]}}),
    ("payee.accountType", {"beneficiaryId": None, "payee": {**UK_PAYEE, "accountType": "PERSON"}}),
    ("payee", {"beneficiaryId": None, "payee": "Jane"}),
    ("cryptoQuote.quoteId", {"beneficiaryId": None, "cryptoQuote": {"quoteId": "not-a-uuid"}}),
    ("cryptoQuote", {"beneficiaryId": None, "cryptoQuote": "abc"}),
    ("beneficiaryId", {"cryptoQuote": {"quoteId": str(uuid.uuid4())}}),
    ("chargeBearer", {"chargeBearer": "ALL"}),
    ("chargeBearer", {"chargeBearer": "sha"}),
    ("scheduledDate", {"scheduledDate": "tomorrow"}),
    ("scheduledDate", {"scheduledDate": "2026-02-30"}),
    ("scheduledDate", {"scheduledDate": 20260101}),
    ("frequency", {"frequency": "YEARLY"}),
    ("idempotencyKey", {"idempotencyKey": "abc"}),
    ("idempotencyKey", {"idempotencyKey": 12}),
    ("virtualIban", {"virtualIban": "GB00NOTANIBAN"}),
    ("virtualIban", {"beneficiaryId": None, "payee": UK_PAYEE, "virtualIban": "DE89370400440532013000"}),
    ("virtualIban", {"virtualIban": "DE89370400440532013000"}),
    ("feeWaived", {"feeWaived": "true"}),
    ("feeWaived", {"feeWaived": 1}),
    ("programId", {"programId": str(uuid.uuid4())}),
    ("sandbox", {"sandbox": True}),
]


@pytest.mark.parametrize(
    ("field", "changes"), BAD_BODIES, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_BODIES)]
)
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(
    api, customer_auth, account, snapshot, field, changes, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, **changes))

    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert field in [error["field"] for error in response.json()["errors"]]
    assert before.unchanged()


@pytest.mark.parametrize("missing", ["amount", "reference"])
def test_a_missing_required_field_is_a_400(api, customer_auth, account, snapshot, missing, beneficiary):
    before = snapshot()
    body = body_for(beneficiary)
    del body[missing]

    response = pay(api, customer_auth, account, **body)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == missing
    assert before.unchanged()


def test_a_malformed_json_body_is_a_400(api, customer_auth, account, snapshot):
    before = snapshot()

    response = api.post(
        payments_url(account.customer_id, account.id),
        data="{not json",
        content_type="application/json",
        **customer_auth,
    )

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert before.unchanged()


def test_a_bad_idempotency_key_header_is_a_400(api, customer_auth, account, snapshot, beneficiary):
    before = snapshot()

    response = api.post(
        payments_url(account.customer_id, account.id),
        body_for(beneficiary),
        format="json",
        HTTP_IDEMPOTENCY_KEY="not-a-uuid",
        **customer_auth,
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "Idempotency-Key"
    assert before.unchanged()


def test_a_beneficiary_of_another_customer_is_not_found(
    api, customer_auth, account, snapshot, beneficiary, customer2_beneficiary
):
    before = snapshot()

    others = pay(
        api, customer_auth, account, **body_for(beneficiary, beneficiaryId=str(customer2_beneficiary.id))
    )
    unknown = pay(api, customer_auth, account, **body_for(beneficiary, beneficiaryId=str(uuid.uuid4())))

    assert (others.status_code, others.json()["code"]) == (404, "RESOURCE_NOT_FOUND")
    assert unknown.status_code == 404
    assert before.unchanged()


def test_a_uk_beneficiary_paid_in_gbp_needs_a_gb_virtual_iban(
    api, customer_auth, account, snapshot, beneficiary
):
    before = snapshot()

    response = pay(api, customer_auth, account, **body_for(beneficiary, virtualIban="DE89370400440532013000"))

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "virtualIban"
    assert before.unchanged()


def test_outsiders_cannot_pay_from_the_account(
    api, customer2, customer2_auth, business_auth, account, snapshot, beneficiary, customer
):
    before = snapshot()
    body = body_for(beneficiary)

    responses = [
        pay(api, customer2_auth, account, **body),
        pay(api, business_auth, account, **body),
        # The caller's own customer id with someone else's account.
        api.post(payments_url(customer2.customer.id, account.id), body, format="json", **customer2_auth),
    ]

    assert [r.status_code for r in responses] == [404, 404, 404]
    assert {r.json()["code"] for r in responses} == {"RESOURCE_NOT_FOUND"}
    assert before.unchanged()


def test_a_missing_or_wrong_token_is_a_401(api, account, snapshot, beneficiary, payer, program):
    before = snapshot()
    url = payments_url(account.customer_id, account.id)
    body = body_for(beneficiary)

    responses = [
        api.post(url, body, format="json"),
        api.post(url, body, format="json", HTTP_AUTHORIZATION="Bearer not.a.token"),
        api.post(url, body, format="json", **id_header(payer.email, payer.program_id)),
    ]

    assert [r.status_code for r in responses] == [401, 401, 401]
    assert before.unchanged()
