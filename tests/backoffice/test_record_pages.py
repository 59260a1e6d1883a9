"""Pages of records staff may look at but not change: they read as records (a
"View" title, no Save, no Delete), their structured values as labelled fields,
their columns under the names operators use."""

import re

from batches.models import Batch
from events.models import Event
from tests.backoffice.conftest import held_payments
from tests.batches.factories import make_batch
from tests.support.factories_onboarding import application_of, legal_document_set, legal_set_accepted


def _buttons(content: bytes) -> dict[str, bool]:
    page = content.decode()
    return {
        "save": 'name="_save"' in page or 'name="_continue"' in page,
        "delete": 'class="deletelink"' in page,
    }


def test_an_event_reads_as_a_record_with_its_data_as_fields(staff_client, account):
    held_payments(account, 1)
    event = Event.objects.filter(type="payment_request.held").latest("created_at")
    client = staff_client("administrator")

    page = client.get(f"/admin/events/event/{event.pk}/change/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "| View event |" in text and _buttons(page.content) == {"save": False, "delete": False}
    # The payment as its route shows it, each field a labelled row: no JSON on the page.
    assert re.search(r"<th>Request id</th><td>" + str(event.data["requestId"]) + "</td>", text)
    assert re.search(r"<th>Amount</th><td>12000.00</td>", text)
    assert '{"' not in text and "{&quot;" not in text and "&#x27;requestId&#x27;" not in text
    # The list still offers the redeliver action to those who may run it.
    assert "redeliver_selected" in client.get("/admin/events/event/").content.decode()


def test_an_application_offers_no_delete_and_shows_its_acceptance_as_fields(staff_client, account):
    application = application_of(account.customer)
    document_set = legal_document_set(application.program)
    legal_set_accepted(application, document_set)
    client = staff_client("administrator")

    page = client.get(f"/admin/onboarding/application/{application.pk}/change/")
    removal = client.get(f"/admin/onboarding/application/{application.pk}/delete/")

    text = page.content.decode()
    assert page.status_code == 200 and not _buttons(page.content)["delete"]
    assert removal.status_code == 403
    assert f"Set version {document_set.version} accepted on" in text
    assert "<td>Terms and Conditions</td>" in text and "<td>Privacy Notice</td>" in text
    assert "document_set_version" not in text and "applicable_to" not in text
    assert "delete_selected" not in client.get("/admin/onboarding/application/").content.decode()


def test_batches_name_their_owner_once_and_show_their_items_money(staff_client, account):
    batch = make_batch(
        account=account,
        owner_customer=account.customer,
        statuses=("SUCCESS", "SUCCESS", "FAILED"),
        amount="1500.25",
    )
    Batch.objects.filter(pk=batch.pk).update(route_customer=account.customer)
    client = staff_client("operations")

    listing = client.get("/admin/batches/batch/").content.decode()
    page = client.get(f"/admin/batches/batch/{batch.pk}/change/").content.decode()

    assert "Custodian or customer" in listing and f"Customer: {account.customer}" in listing
    for internal in ("Owner customer", "Route customer", "owner customer", "route customer"):
        assert internal not in listing and internal not in page
    # The customer is named once on the page, with how its payers are limited.
    owner = (
        f"Customer: {account.customer}, paying from its own accounts"
        " (payer accounts limited to this customer)"
    )
    assert owner in page and page.count(str(account.customer)) == 1
    # Item count, the total per currency and the count per status, on the list and the page.
    for text in (listing, page):
        assert "4,500.75 GBP" in text and "2 success, 1 failed" in text
    assert '<td class="field-items_count">3</td>' in listing
    # The items themselves, on the page: index, status, amount, error.
    assert re.search(r"<td>2</td><td>Failed</td><td>1,500.25 GBP</td>", page)
    assert "LIMIT_EXCEEDED: test" in page and f"?q={batch.pk}" in page
    assert _buttons(page.encode()) == {"save": False, "delete": False}
