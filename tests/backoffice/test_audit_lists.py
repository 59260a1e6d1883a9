"""Every back-office page that shows personal data leaves a StaffView: who, when
and what. A list (a changelist, its search, the rows an action asks about) leaves
one per record it showed, with the model and the search text; a list that
showed nothing leaves one without an object id, so the search is kept."""

import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType

from audit.models import StaffView
from audit.services import PERSONAL_DATA
from tests.backoffice.rows import MAKERS, owners_make
from tests.support.factories import BeneficiaryFactory

SUPPORT = "support@backoffice.example"


def _url(label: str) -> str:
    model = apps.get_model(label)
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


def _views(label: str) -> list[StaffView]:
    content_type = ContentType.objects.get_for_model(apps.get_model(label), for_concrete_model=False)
    return list(StaffView.objects.filter(content_type=content_type).order_by("id"))


@pytest.mark.parametrize("label", sorted(PERSONAL_DATA))
def test_a_list_of_personal_data_records_each_record_it_showed(label, staff_client, db):
    owners = owners_make()
    MAKERS[label.lower()](owners)
    client = staff_client("administrator")

    page = client.get(_url(label))

    assert page.status_code == 200
    shown = {str(row.pk) for row in page.context["cl"].result_list}
    views = _views(label)
    assert shown and {view.object_id for view in views} == shown and len(views) == len(shown)
    assert {(view.actor_email, view.page, view.search) for view in views} == {
        ("administrator@backoffice.example", _url(label), "")
    }
    assert all(view.object_repr for view in views)


@pytest.mark.parametrize(
    "label, search_of",
    [
        ("payments.Beneficiary", lambda row: str(row.id)),
        ("authn.User", lambda row: row.email),
        ("bankapi.Customer", lambda row: str(row.id)),
        ("cards.Cardholder", lambda row: str(row.id)),
        ("onboarding.Ubo", lambda row: str(row.id)),
    ],
)
def test_a_search_of_a_list_of_people_records_the_search_and_the_one_it_found(
    label, search_of, staff_client, db
):
    owners = owners_make()
    MAKERS[label.lower()](owners)
    wanted = apps.get_model(label).objects.order_by("pk").last()
    client = staff_client("support")

    found = client.get(_url(label), {"q": search_of(wanted)})
    nothing = client.get(_url(label), {"q": "Nobody Ofthisname"})

    assert found.status_code == 200 and nothing.status_code == 200
    assert [row.pk for row in found.context["cl"].result_list] == [wanted.pk]
    views = _views(label)
    assert [(view.object_id, view.search, view.actor_email) for view in views] == [
        (str(wanted.pk), search_of(wanted), SUPPORT),
        ("", "Nobody Ofthisname", SUPPORT),
    ]
    assert views[0].object_repr == str(wanted)[:200]
    assert "q=Nobody+Ofthisname" in views[1].page


def test_a_list_without_personal_data_records_nothing(staff_client, db):
    client = staff_client("administrator")

    assert client.get("/admin/bankapi/program/").status_code == 200
    assert client.get("/admin/payments/fxrate/", {"q": "GBP"}).status_code == 200
    assert not StaffView.objects.exists()


def test_the_delete_page_and_an_actions_page_record_the_records_they_show(staff_client, customer):
    beneficiaries = [BeneficiaryFactory(customer=customer) for _ in range(2)]
    client = staff_client("administrator")
    url = _url("payments.Beneficiary")

    delete_page = client.get(f"{url}{beneficiaries[0].id}/delete/")
    action_page = client.post(
        url, {"action": "delete_selected", "_selected_action": [str(b.id) for b in beneficiaries]}
    )

    assert delete_page.status_code == 200 and action_page.status_code == 200
    views = _views("payments.Beneficiary")
    assert [view.object_id for view in views[:1]] == [str(beneficiaries[0].id)]
    assert views[0].page == f"{url}{beneficiaries[0].id}/delete/"
    assert sorted(view.object_id for view in views[1:]) == sorted(str(b.id) for b in beneficiaries)
    assert {view.page for view in views[1:]} == {url}


def test_the_audit_list_shows_what_a_search_was(staff_client, customer):
    client = staff_client("compliance")
    client.get(_url("bankapi.Customer"), {"q": str(customer.id)})

    audit_list = client.get("/admin/audit/staffview/")

    assert audit_list.status_code == 200
    assert f'<td class="field-search">{customer.id}</td>' in audit_list.content.decode()
