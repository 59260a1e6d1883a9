"""The back office's pages of money coming in and cards that spend: incoming
payments and card authorizations, beside the payments' pages. Every group may
look (list and page); nobody may add, change or delete one (no form moves money
or tenancy: the API's services do); every list and page that names the debtor,
the card or the account writes a staff-view record; no action moves money."""

import pytest
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType

from audit.models import StaffView
from bankapi.backoffice import GROUPS
from cards.models import CardAuthorization
from payments.models import IncomingPayment
from tests.backoffice.conftest import admin_url
from tests.backoffice.rows import MAKERS, owners_make

pytestmark = pytest.mark.django_db

MODELS = [IncomingPayment, CardAuthorization]


def _made(model) -> object:
    owners = owners_make()
    MAKERS[model._meta.label_lower](owners)
    return model.objects.order_by("-id").first()  # the first row the list shows


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_group_reads_the_list_and_the_page_and_none_changes_one(staff_client, group, model):
    row = _made(model)
    client = staff_client(group)
    before = {field.attname: getattr(row, field.attname) for field in model._meta.concrete_fields}

    listing = client.get(admin_url(model))
    page = client.get(admin_url(model, f"{row.pk}/change/"))

    assert listing.status_code == 200 and page.status_code == 200
    assert str(row.pk) in listing.content.decode()
    # Shown, not a form: no input of the record's fields, tenancy included.
    for name in ("program", "sandbox", "account", "customer", "amount", "status"):
        assert f'name="{name}"' not in page.content.decode()
    assert client.get(admin_url(model, "add/")).status_code == 403
    assert client.get(admin_url(model, f"{row.pk}/delete/")).status_code == 403
    moved = client.post(
        admin_url(model, f"{row.pk}/change/"),
        {"amount": "999.99", "status": "CLEARED", "sandbox": "on", "program": ""},
    )
    assert moved.status_code == 403
    row.refresh_from_db()
    assert {field.attname: getattr(row, field.attname) for field in model._meta.concrete_fields} == before


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_no_action_on_the_list_moves_money(model):
    model_admin = admin.site._registry[model]
    # Only the site-wide delete (refused above: no delete permission) would be offered.
    assert not model_admin.actions
    assert not model_admin.has_delete_permission(None)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_list_and_the_page_write_staff_views(staff_client, model):
    row = _made(model)
    client = staff_client("support")
    content_type = ContentType.objects.get_for_model(model)

    listing = client.get(admin_url(model), {"q": str(row.pk)})
    page = client.get(admin_url(model, f"{row.pk}/change/"))

    assert listing.status_code == 200 and page.status_code == 200
    assert [row.pk] == [found.pk for found in listing.context["cl"].result_list]
    views = StaffView.objects.filter(content_type=content_type, object_id=str(row.pk))
    assert {view.actor_email for view in views} == {"support@backoffice.example"}
    assert views.filter(search=str(row.pk), page__startswith=admin_url(model)).exists()
    assert views.filter(page__startswith=admin_url(model, f"{row.pk}/change/")).exists()


def test_the_pages_show_what_the_records_hold(staff_client):
    incoming = _made(IncomingPayment)
    authorization = _made(CardAuthorization)
    client = staff_client("support")

    incoming_page = client.get(admin_url(IncomingPayment, f"{incoming.pk}/change/")).content.decode()
    authorization_page = client.get(
        admin_url(CardAuthorization, f"{authorization.pk}/change/")
    ).content.decode()

    for text in (incoming.debtor_name, incoming.end_to_end_id, "GB33BUKB20201555555555"):
        assert text in incoming_page
    for text in (authorization.merchant_name, "INSUFFICIENT_FUNDS", authorization.get_status_display()):
        assert text in authorization_page
