"""A `nextToken` is good only for the list that issued it: the same route, path
ids and filters (every query parameter but `limit` and `nextToken`), and the
same owner. Any other token answers 400 VALIDATION_ERROR naming `nextToken`,
never 500 and never a page of another list; an empty token is as if absent."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from batches.models import Draft
from events.models import WebhookEndpoint
from payments.models import PaymentRequest
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import payment_settle
from tests.batches.factories import make_batch
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account, uk_account


def accept(account, reference: str = "Rent") -> PaymentRequest:
    return payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal("1.00"), currency=account.currency, reference=reference
        ),
    )


def refused_as_token(response) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert [error["field"] for error in body["errors"]] == ["nextToken"]


@pytest.fixture
def lists(
    api, customer_auth, customer, account, beneficiary, management
) -> dict[str, tuple[str, dict, dict]]:
    """Every cursor-paginated list, with two or more rows each: name -> (url,
    filters, headers)."""
    second = funded_account(customer, "100.00", **uk_account())
    for payer in (account, account, second, second):
        accept(payer)
    payment_settle(accept(account))  # a settled payment is a transaction, not a listed request
    later = (timezone.now() + timedelta(days=30)).date().isoformat()
    for _ in range(2):
        created = api.post(
            payments_url(customer.id, account.id),
            {
                "amount": "5.00",
                "reference": "Rent",
                "beneficiaryId": str(beneficiary.id),
                "scheduledDate": later,
            },
            format="json",
            **customer_auth,
        )
        assert created.status_code == 200, created.content
        make_batch(account=account, owner_customer=customer)
    for _ in range(2):
        Draft.objects.create(
            program_id=account.program_id,
            sandbox=account.sandbox,
            owner_customer=customer,
            route_customer=customer,
            payments=[],
            payments_count=0,
            expires_at=timezone.now() + timedelta(hours=1),
        )
        WebhookEndpoint.objects.create(
            program_id=account.program_id,
            sandbox=True,
            url="https://hooks.example.com/bank",
            event_types=["payment_request.accepted"],
            secret="whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
        )
    program = {"programId": str(account.program_id)}
    return {
        "payment requests": (payments_url(customer.id, account.id, "payment-requests"), {}, customer_auth),
        "another account's payment requests": (
            payments_url(customer.id, second.id, "payment-requests"),
            {},
            customer_auth,
        ),
        "transactions": (payments_url(customer.id, account.id, "transactions"), {}, customer_auth),
        "scheduled payments": (
            payments_url(customer.id, account.id, "scheduled-payments"),
            {},
            customer_auth,
        ),
        "events": ("/v1/events", {}, customer_auth),
        "batches": (f"/v1/customers/{customer.id}/batch-payments", {}, customer_auth),
        "drafts": (f"/v1/customers/{customer.id}/batch-payments", {"drafts": "true"}, customer_auth),
        "management events": ("/v1/events", program, management.id),
        "webhook endpoints": ("/v1/webhook-endpoints", program, management.id),
    }


def first_token(api, url: str, filters: dict, headers: dict) -> str:
    response = api.get(url, {**filters, "limit": 1}, **headers)
    assert response.status_code == 200, response.content
    token = response.json()["data"]["nextToken"]
    assert token, url
    return token


def test_a_token_is_taken_back_only_by_the_list_that_issued_it(api, lists):
    tokens = {name: first_token(api, *where) for name, where in lists.items()}

    for name, (url, filters, headers) in lists.items():
        own = api.get(url, {**filters, "limit": 1, "nextToken": tokens[name]}, **headers)
        assert own.status_code == 200, (name, own.content)
        for issuer, token in tokens.items():
            if issuer != name:
                refused_as_token(api.get(url, {**filters, "limit": 1, "nextToken": token}, **headers))


def test_limit_may_change_and_an_empty_token_is_as_if_absent(api, customer_auth, account):
    for _ in range(3):
        accept(account)
    token = first_token(api, "/v1/events", {}, customer_auth)

    assert api.get("/v1/events", {"limit": 5, "nextToken": token}, **customer_auth).status_code == 200
    empty = api.get("/v1/events", {"limit": 1, "nextToken": ""}, **customer_auth)
    assert empty.status_code == 200 and empty.json()["data"]["nextToken"] is not None


def test_a_token_under_other_filters_is_refused(api, customer_auth, account):
    for _ in range(3):
        accept(account)
    everything = first_token(api, "/v1/events", {}, customer_auth)
    accepted = {"type": "payment_request.accepted"}
    by_type = first_token(api, "/v1/events", accepted, customer_auth)

    refused_as_token(api.get("/v1/events", {**accepted, "nextToken": everything}, **customer_auth))
    refused_as_token(api.get("/v1/events", {"nextToken": by_type}, **customer_auth))
    since = {"createdAfter": "2000-01-01T00:00:00Z"}
    refused_as_token(api.get("/v1/events", {**since, "nextToken": everything}, **customer_auth))


def test_another_customers_token_is_refused(api, customer_auth, account, customer2, customer2_account):
    for payer in (account, account, customer2_account, customer2_account):
        accept(payer)
    theirs = first_token(api, "/v1/events", {}, customer2.access)

    refused_as_token(api.get("/v1/events", {"nextToken": theirs}, **customer_auth))


def test_another_programs_token_is_refused_to_management(api, management, account, business, program):
    accept(account)
    accept(account)
    other = funded_account(business.customer, "100.00")
    accept(other)
    accept(other)
    own = {"programId": str(program.id)}
    token = first_token(api, "/v1/events", own, management.id)

    elsewhere = {"programId": str(business.program_id), "nextToken": token}
    refused_as_token(api.get("/v1/events", elsewhere, **management.id))
