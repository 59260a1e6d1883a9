"""The back-office audit: every staff change keeps its before and after, shown on
the record's history page; every page of personal data, card details or a document
a staff member opens is recorded; both records are read-only for everyone."""

import re
import uuid

from django.contrib.auth.models import Group

from audit.models import ChangeRecord, StaffView
from authn.models import User
from bankapi.models import Program
from cards.services import card_issue
from events.models import WebhookEndpoint
from onboarding.models import DocumentUpload
from tests.backoffice.conftest import staff_user
from tests.backoffice.test_settings_actions import _program_form
from tests.payments.test_query_budget import _pay
from tests.support.factories import BeneficiaryFactory, funded_account
from tests.support.factories_onboarding import application_of

SECRET = "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"


def _cells(html: str, css: str) -> list[str]:
    return [cell.strip() for cell in re.findall(rf'<td class="{css}">(.*?)</td>', html, re.S)]


def test_a_staff_edit_keeps_who_when_before_and_after_on_the_history_page(staff_client, program):
    client = staff_client("administrator")
    url = f"/admin/bankapi/program/{program.id}/"

    response = client.post(f"{url}change/", _program_form(program, review_threshold="500.00"))
    history = client.get(f"{url}history/")

    assert response.status_code == 302
    change = ChangeRecord.objects.get(object_id=str(program.id))
    assert change.action == "changed" and change.actor_email == "administrator@backoffice.example"
    assert change.before == {"review_threshold": str(program.review_threshold)}
    assert change.after == {"review_threshold": "500.00"}
    assert change.page == f"{url}change/"
    html = history.content.decode()
    assert history.status_code == 200
    assert _cells(html, "audit-before") == [str(program.review_threshold)]
    assert _cells(html, "audit-after") == ["500.00"]
    assert "administrator@backoffice.example" in html


def test_a_group_change_is_recorded_and_no_secret_ever_is(staff_client, program):
    endpoint = WebhookEndpoint.objects.create(
        program=program,
        url="https://hooks.example.com/bank",
        event_types=["payment_request.settled"],
        secret=SECRET,
    )
    support = staff_user("support", "agent@backoffice.example")
    client = staff_client("administrator")

    rotated = client.post(
        "/admin/events/webhookendpoint/",
        {"action": "rotate_secret_selected", "index": "0", "_selected_action": [str(endpoint.id)]},
    )
    regrouped = client.post(
        f"/admin/authn/user/{support.id}/change/",
        {
            "email": support.email,
            "role": support.role,
            "first_name": "",
            "last_name": "",
            "is_active": "on",
            "is_staff": "on",
            "groups": [str(Group.objects.get(name="operations").id)],
        },
    )

    assert rotated.status_code in (200, 302) and regrouped.status_code == 302, regrouped.content[:3000]
    endpoint.refresh_from_db()
    assert endpoint.secret != SECRET and endpoint.previous_secret == SECRET
    groups = ChangeRecord.objects.get(object_id=str(support.id), before__has_key="groups")
    assert (groups.before, groups.after) == ({"groups": ["support"]}, {"groups": ["operations"]})
    rotation = ChangeRecord.objects.get(object_id=str(endpoint.id))
    assert set(rotation.after) == {"previous_secret_expires_at"}
    everything = str(list(ChangeRecord.objects.values_list("before", "after")))
    support.refresh_from_db()
    for secret in (SECRET, endpoint.secret, support.password):
        assert secret not in everything


def test_a_payment_writes_no_history(api, payer):
    account = funded_account(payer.customer, "100.00")
    payee = BeneficiaryFactory(customer=payer.customer)
    assert _pay(api, account, payee, payer.access).status_code == 200
    assert not ChangeRecord.objects.exists()


def test_saving_an_audited_record_outside_the_back_office_costs_no_query(program, django_assert_num_queries):
    program = Program.objects.get(id=program.id)
    program.review_threshold = "123.00"

    with django_assert_num_queries(1):  # the UPDATE alone: no history read, no history row
        program.save()

    assert not ChangeRecord.objects.exists()


def test_opening_a_customer_application_card_or_document_page_is_recorded(staff_client, customer, account):
    application = application_of(customer)
    card = card_issue(account=account, name_on_card="AUDITED")
    document = DocumentUpload.objects.create(
        program=customer.program,
        sandbox=customer.sandbox,
        customer=customer,
        collection="kyc",
        document_type="passport",
        key=f"kyc/{uuid.uuid4()}",
        content_type="image/png",
    )
    client = staff_client("support")
    pages = [
        f"/admin/bankapi/customer/{customer.id}/change/",
        f"/admin/onboarding/application/{application.id}/change/",
        f"/admin/cards/card/{card.id}/change/",
        f"/admin/onboarding/documentupload/{document.id}/change/",
        f"/admin/bankapi/customer/{customer.id}/history/",
    ]
    # Not personal data: no record.
    program_page = client.get(f"/admin/bankapi/program/{customer.program_id}/change/")

    statuses = [client.get(page).status_code for page in pages]

    assert statuses == [200] * len(pages) and program_page.status_code == 200
    views = list(StaffView.objects.order_by("id"))
    assert [view.page for view in views] == pages
    assert [view.object_id for view in views] == [
        str(customer.id),
        str(application.id),
        str(card.id),
        str(document.id),
        str(customer.id),
    ]
    assert {view.actor_email for view in views} == {"support@backoffice.example"}
    assert card.pan not in str(list(StaffView.objects.values()))


def test_the_audit_records_are_read_only_even_for_a_superuser(client, customer):
    superuser = User.objects.create_superuser("root@backoffice.example", "Root-Password-4242")
    client.force_login(superuser)
    client.get(f"/admin/bankapi/customer/{customer.id}/change/")
    view = StaffView.objects.get()
    url = f"/admin/audit/staffview/{view.id}/"

    listing = client.get("/admin/audit/staffview/")
    page = client.get(f"{url}change/")
    refused = [
        client.get("/admin/audit/staffview/add/").status_code,
        client.post("/admin/audit/staffview/add/", {"page": "/forged/"}).status_code,
        client.post(f"{url}change/", {"page": "/forged/"}).status_code,
        client.post(f"{url}delete/", {"post": "yes"}).status_code,
        client.get("/admin/audit/changerecord/add/").status_code,
    ]
    bulk = client.post(
        "/admin/audit/staffview/",
        {"action": "delete_selected", "_selected_action": [str(view.id)], "post": "yes"},
    )

    assert listing.status_code == 200 and page.status_code == 200
    assert b'name="_save"' not in page.content
    assert refused == [403, 403, 403, 403, 403]
    assert b"delete_selected" not in listing.content and bulk.status_code in (200, 302)
    view.refresh_from_db()
    assert view.page == f"/admin/bankapi/customer/{customer.id}/change/"
