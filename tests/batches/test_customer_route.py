"""The single-customer route: a customer paying from its own accounts, with the
same actions, parameters and answers as the custodian route."""

import pytest

from bankapi.models import Account
from tests.batches.conftest import payment, verify
from tests.batches.factories import make_batch

pytestmark = pytest.mark.django_db


def route(customer_id) -> str:
    return f"/v1/customers/{customer_id}/batch-payments"


def test_a_customer_verifies_lists_and_reads_its_own_drafts(
    api, customer_auth, customer_account, customer2_account
):
    own, foreign = customer_account, customer2_account
    url = route(own.customer_id)

    draft_id = verify(api, customer_auth, [payment(own), payment(foreign)], url=url)

    listed = api.get(f"{url}?drafts=true", **customer_auth).json()["data"]["paymentsBatches"]
    assert [entry["id"] for entry in listed] == [draft_id]
    draft = api.get(f"{url}/{draft_id}", **customer_auth).json()["data"]["draft"]
    assert [e["index"] for e in draft["validPayments"]] == [0]
    assert draft["invalidPayments"][0]["reasons"] == [
        "payer.account: not an account the caller may pay from."
    ]
    # The same draft through the general route.
    assert api.get(f"/v1/batch-payments/{draft_id}", **customer_auth).status_code == 200


def test_another_customers_route_is_a_404(api, customer_auth, customer2):
    other = customer2.customer.id
    for response in (
        api.get(route(other), **customer_auth),
        api.post(route(other), {"action": "verify", "payments": [{}]}, format="json", **customer_auth),
        api.get(f"{route(other)}/00000000-0000-0000-0000-000000000000", **customer_auth),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "RESOURCE_NOT_FOUND"


def test_a_custodian_on_one_clients_route_pays_from_that_client_only(api, custodian_auth, custodian_accounts):
    first, second = custodian_accounts
    url = route(first["customerId"])
    draft_id = verify(api, custodian_auth, [payment(first), payment(second)], url=url)
    draft = api.get(f"{url}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert [e["index"] for e in draft["validPayments"]] == [0]
    # Not the other client's route.
    assert api.get(f"{route(second['customerId'])}/{draft_id}", **custodian_auth).status_code == 404


def test_the_route_lists_only_the_customers_batches(api, custodian, custodian_auth, custodian_accounts):
    first, second = (Account.objects.get(id=entry["accountId"]) for entry in custodian_accounts)
    mine = make_batch(account=first, custodian=custodian)
    make_batch(account=second, custodian=custodian)

    data = api.get(f"{route(first.customer_id)}?includeItemSummary=true", **custodian_auth).json()["data"]
    assert [entry["id"] for entry in data["paymentsBatches"]] == [str(mine.id)]
    assert data["paymentsBatches"][0]["itemsStatus"]["completed"] == 1
    assert api.get(f"{route(first.customer_id)}?limit=0", **custodian_auth).status_code == 400


def test_management_callers_do_not_use_the_customer_route(api, management_auth, customer, program):
    url = f"{route(customer.customer.id)}?programId={program.id}"
    assert api.get(url, **management_auth).status_code == 401
