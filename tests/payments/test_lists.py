"""GET .../payment-requests and .../transactions: newest first, cursor-paginated."""

from decimal import Decimal

import pytest

from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import payment_fail, payment_settle
from tests.payments.conftest import payments_url
from tests.support.auth import id_header
from tests.support.factories import funded_account

REQUEST_KEYS = {
    "requestId",
    "status",
    "amount",
    "currency",
    "reference",
    "beneficiaryId",
    "scheduleId",
    "failureReason",
    "createdDateTime",
    "updatedAt",
}
TRANSACTION_KEYS = {
    "transactionId",
    "requestId",
    "amount",
    "currency",
    "direction",
    "reference",
    "bookedAt",
    "returnOf",
    "incomingPaymentId",
    "cardAuthorizationId",
}


def accept(account, amount="1.00", reference="Ref"):
    return payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal(amount), currency=account.currency, reference=reference
        ),
    )


def test_payment_requests_are_listed_newest_first_across_pages(api, customer_auth, customer):
    account = funded_account(customer, "100.00")
    made = [accept(account, reference=f"Ref {n}") for n in range(5)]
    url = payments_url(customer.id, account.id, "payment-requests")

    first = api.get(url, {"limit": 2}, **customer_auth).json()["data"]
    second = api.get(url, {"limit": 2, "nextToken": first["nextToken"]}, **customer_auth).json()["data"]
    third = api.get(url, {"limit": 2, "nextToken": second["nextToken"]}, **customer_auth).json()["data"]

    listed = [r["requestId"] for page in (first, second, third) for r in page["paymentRequests"]]
    assert listed == [str(r.id) for r in reversed(made)]
    assert third["nextToken"] is None
    assert set(first["paymentRequests"][0]) == REQUEST_KEYS


def test_a_payment_request_is_shown_as_the_design_says(api, customer_auth, account, beneficiary):
    response = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "7.5", "reference": "Gym", "beneficiaryId": str(beneficiary.id)},
        format="json",
        **customer_auth,
    )

    listed = api.get(payments_url(account.customer_id, account.id, "payment-requests"), **customer_auth)

    entry = listed.json()["data"]["paymentRequests"][0]
    assert entry["requestId"] == response.json()["data"]["bankTransfer"]["requestId"]
    assert (entry["status"], entry["amount"], entry["currency"], entry["reference"]) == (
        "PENDING",
        "7.50",
        "GBP",
        "Gym",
    )
    assert (entry["beneficiaryId"], entry["scheduleId"], entry["failureReason"]) == (
        str(beneficiary.id),
        None,
        None,
    )


def test_only_pending_held_and_failed_requests_are_listed(api, customer_auth, customer):
    account = funded_account(customer, "100000.00")
    pending, held = accept(account), accept(account, "10000.00")
    failed = payment_fail(accept(account), "Returned")
    payment_settle(accept(account))

    listed = api.get(payments_url(customer.id, account.id, "payment-requests"), **customer_auth)

    statuses = {r["requestId"]: r["status"] for r in listed.json()["data"]["paymentRequests"]}
    assert statuses == {str(pending.id): "PENDING", str(held.id): "PENDING_TM", str(failed.id): "FAILED"}


def test_the_opening_balance_is_a_credit_on_the_transactions_list(api, customer_auth, account):
    listed = api.get(payments_url(account.customer_id, account.id, "transactions"), **customer_auth)

    transactions = listed.json()["data"]["transactions"]
    assert len(transactions) == 1
    assert set(transactions[0]) == TRANSACTION_KEYS
    assert (transactions[0]["direction"], transactions[0]["amount"], transactions[0]["currency"]) == (
        "CREDIT",
        "100000.00",
        "GBP",
    )
    assert transactions[0]["requestId"] is None
    assert transactions[0]["incomingPaymentId"] is None and transactions[0]["cardAuthorizationId"] is None


def test_transactions_are_listed_newest_first_across_pages(api, customer_auth, customer):
    account = funded_account(customer, "100.00")
    settled = [payment_settle(accept(account, reference=f"Ref {n}")) for n in range(3)]
    url = payments_url(customer.id, account.id, "transactions")

    first = api.get(url, {"limit": 3}, **customer_auth).json()["data"]
    second = api.get(url, {"limit": 3, "nextToken": first["nextToken"]}, **customer_auth).json()["data"]

    assert [t["requestId"] for t in first["transactions"]] == [str(r.id) for r in reversed(settled)]
    assert [t["direction"] for t in second["transactions"]] == ["CREDIT"]
    assert second["nextToken"] is None


@pytest.mark.parametrize("what", ["payment-requests", "transactions"])
@pytest.mark.parametrize(
    "query", [{"limit": "0"}, {"limit": "10abc"}, {"limit": "-1"}, {"nextToken": "forged"}]
)
def test_bad_query_parameters_are_a_400(api, customer_auth, account, what, query):
    response = api.get(payments_url(account.customer_id, account.id, what), query, **customer_auth)

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("what", ["payment-requests", "transactions"])
def test_outsiders_cannot_list_the_account(
    api, customer2_auth, business_auth, account, what, customer2_account
):
    accept(account)
    other = customer2_account

    responses = [
        api.get(payments_url(account.customer_id, account.id, what), **customer2_auth),
        api.get(payments_url(account.customer_id, account.id, what), **business_auth),
        api.get(payments_url(other.customer_id, account.id, what), **customer2_auth),
    ]

    assert [r.status_code for r in responses] == [404, 404, 404]


@pytest.mark.parametrize("what", ["payment-requests", "transactions"])
def test_the_lists_need_the_access_token(api, account, what, payer, program):
    url = payments_url(account.customer_id, account.id, what)

    responses = [
        api.get(url),
        api.get(url, **id_header(payer.email, payer.program_id)),
    ]

    assert [r.status_code for r in responses] == [401, 401]
