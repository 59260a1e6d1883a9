"""GET /v1/batch-payments/{batchId}: items of a batch, or a draft."""

import pytest

from bankapi.models import Account
from batches.services.processing import batch_process
from tests.batches.conftest import PAYEE_IBAN, URL, payment, verify
from tests.batches.factories import make_batch
from tests.batches.helpers import batch_submitted

pytestmark = pytest.mark.django_db


def test_a_batch_answers_its_status_and_items(api, custodian_auth, custodian_user, custodian_accounts):
    first = Account.objects.get(id=custodian_accounts[0]["accountId"])
    batch = batch_submitted(custodian_user, [payment(first, "4.00", payee=PAYEE_IBAN), payment(first, "x")])
    batch_process(str(batch.id))

    response = api.get(f"{URL}/{batch.id}", **custodian_auth)

    assert response.status_code == 200
    data = response.json()["data"]
    assert (data["batchId"], data["status"]) == (str(batch.id), "PARTIALLY_FAILED")
    paid, refused = data["paymentsBatchItems"]
    assert paid["status"] == "SUCCESS" and "error" not in paid
    assert paid["payer"] == {"name": first.customer.name, "accountNumber": first.account_number}
    assert paid["payee"] == {
        "name": "Hans Payee",
        "accountNumber": None,
        "sortCode": None,
        "iban": "DE89370400440532013000",
        "bic": "COBADEFFXXX",
    }
    assert (paid["customerId"], paid["accountId"]) == (str(first.customer_id), str(first.id))
    assert paid["amount"] == "4.00" and paid["bankName"] is None
    assert paid["scheduledDate"].count("/") == 2 and len(paid["scheduledDate"]) == 10
    assert paid["programId"] == str(first.program_id) and paid["sandbox"] is True
    assert refused["status"] == "FAILED" and refused["error"].startswith("amount:")
    assert refused["amount"] is None


def test_management_reads_a_programs_batch(
    api, management_auth, program, business_program, custodian, custodian_accounts
):
    batch = make_batch(
        account=Account.objects.get(id=custodian_accounts[0]["accountId"]), custodian=custodian
    )
    response = api.get(f"{URL}/{batch.id}?programId={program.id}", **management_auth)
    assert response.status_code == 200
    assert len(response.json()["data"]["paymentsBatchItems"]) == 2
    assert api.get(f"{URL}/{batch.id}", **management_auth).status_code == 400
    other = api.get(f"{URL}/{batch.id}?programId={business_program.id}", **management_auth)
    assert other.status_code == 404


@pytest.mark.parametrize("batch_id", ["nope", "00000000-0000-0000-0000-000000000000", "%20", "1" * 300])
def test_unknown_ids_are_a_404(api, custodian_auth, batch_id):
    response = api.get(f"{URL}/{batch_id}", **custodian_auth)
    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"


def test_another_callers_batch_and_draft_are_a_404(
    api, custodian, custodian_auth, custodian_accounts, customer2_auth, business
):
    batch = make_batch(
        account=Account.objects.get(id=custodian_accounts[0]["accountId"]), custodian=custodian
    )
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0])])
    for auth in (customer2_auth, business.access):
        for some_id in (batch.id, draft_id):
            response = api.get(f"{URL}/{some_id}", **auth)
            assert response.status_code == 404


def test_a_customers_own_draft_through_the_management_route_is_a_404(
    api, customer_auth, customer_account, management_auth, program
):
    draft_id = verify(api, customer_auth, [payment(customer_account)])
    assert api.get(f"{URL}/{draft_id}", **customer_auth).status_code == 200
    response = api.get(f"{URL}/{draft_id}?programId={program.id}", **management_auth)
    assert response.status_code == 404


def test_wrong_tokens(api, custodian, custodian_accounts, custodian_setup):
    batch = make_batch(
        account=Account.objects.get(id=custodian_accounts[0]["accountId"]), custodian=custodian
    )
    assert api.get(f"{URL}/{batch.id}").status_code == 401
    assert api.get(f"{URL}/{batch.id}", **custodian_setup.person.id).status_code == 401
