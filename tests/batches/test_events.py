"""A batch writes its events as its status settles, and each funded item's
payment writes the payment event its payer's customer sees (events and webhooks)."""

import pytest

from bankapi.models import Account, Customer
from batches.services.processing import batch_process
from events.models import Event
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.support.factories import funded_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def payers(custodian_accounts) -> list[Account]:
    return [Account.objects.get(id=entry["accountId"]) for entry in custodian_accounts]


def batch_types(batch) -> list[str]:
    return list(
        Event.objects.filter(resource_type="batch", resource_id=str(batch.id))
        .order_by("id")
        .values_list("type", flat=True)
    )


def test_a_completed_batch_writes_funded_then_completed(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00"), payment(payers[1], "2.00")])
    assert batch_types(batch) == []

    batch_process(str(batch.id))

    assert batch_types(batch) == ["batch.funded", "batch.completed"]
    completed = Event.objects.get(resource_id=str(batch.id), type="batch.completed")
    assert completed.custodian_id == custodian_user.custodian_id
    assert completed.data["status"] == "COMPLETED"
    assert completed.data["itemsStatus"] == {"completed": 2, "pending": 0, "processing": 0, "failed": 0}
    assert completed.data["totalAmount"] == "3.00"
    paid = Event.objects.filter(type="payment_request.accepted", customer_id=payers[0].customer_id)
    assert paid.filter(data__amount="1.00").count() == 1


def test_a_batch_with_a_failed_item_is_partially_failed(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00"), payment(payers[0], "0")])
    batch_process(str(batch.id))
    assert batch_types(batch) == ["batch.funded", "batch.partially_failed"]


def test_no_payer_funded_is_funding_failed(custodian_user, custodian):
    customer = Customer.objects.create(program_id=custodian.program_id, name="Short", custodian=custodian)
    short = funded_account(customer, "1.00", sort_code="300000", account_number="12345678")
    batch = batch_submitted(custodian_user, [payment(short, "6.00")])
    batch_process(str(batch.id))
    assert batch_types(batch) == ["batch.funding_failed"]


def test_only_invalid_items_is_failed(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "abc")])
    batch_process(str(batch.id))
    assert batch_types(batch) == ["batch.failed"]


def test_processing_again_writes_nothing_again(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00")])
    batch_process(str(batch.id))
    before = Event.objects.count()
    batch_process(str(batch.id))
    assert Event.objects.count() == before


def test_the_custodian_lists_its_batch_events_and_another_customer_does_not(
    plain_api, custodian_user, custodian_auth, customer2_auth, payers
):
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00")])
    batch_process(str(batch.id))

    mine = plain_api.get("/v1/events", {"type": "batch.completed"}, **custodian_auth).json()["data"]["events"]
    theirs = plain_api.get("/v1/events", {"type": "batch.completed"}, **customer2_auth).json()["data"][
        "events"
    ]

    assert [e["data"]["id"] for e in mine] == [str(batch.id)]
    assert theirs == []
