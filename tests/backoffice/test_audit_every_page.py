"""Every registered admin list and record page is audited, or shown here to name
no personal data: for each model the admin registers, its changelist (with rows)
and the page of its first row either write a StaffView (the list: one per row it
showed; the page: its record), or are on the list below of pages that name no
customer, user e-mail, payee or account number, and then the test reads them and
finds none of the ones their rows hang on."""

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.contenttypes.models import ContentType

from audit.models import StaffView
from audit.services import PERSONAL_DATA
from tests.backoffice.rows import MAKERS, owners_make

# Pages shown to name no customer, user e-mail, payee or account number: settings,
# rates, the bank's own ledger accounts (not a customer's), webhook endpoints and their deliveries
# (a URL, an event type and id, a status code), a custodian (a partner firm, not
# a customer) and staff groups.
NAME_NO_PERSONAL_DATA = frozenset(
    {
        "auth.Group",
        "bankapi.Program",
        "bankapi.Custodian",
        "payments.FxRate",
        "payments.SystemAccount",
        "onboarding.LegalDocumentSet",
        "onboarding.ProgramOnboarding",
        "events.WebhookEndpoint",
        "events.Delivery",
        "events.DeliveryAttempt",
    }
)


def _registered() -> list[str]:
    return sorted(model._meta.label for model in admin.site._registry)


def test_every_registered_page_is_audited_or_listed_as_naming_no_personal_data():
    registered = set(_registered())

    assert sorted(registered - PERSONAL_DATA - NAME_NO_PERSONAL_DATA) == []
    assert sorted(NAME_NO_PERSONAL_DATA & PERSONAL_DATA) == []
    assert sorted(NAME_NO_PERSONAL_DATA - registered) == []


def _personal_values(owners) -> list[str]:
    """What the rows hang on that an unaudited page must not show."""
    users = (owners.customer_user, owners.custodian_user)
    account = owners.account
    return [owners.customer.name, account.account_number, account.iban or "", *(u.email for u in users)]


@pytest.mark.parametrize("label", _registered())
def test_a_list_and_a_record_page_write_a_staff_view_unless_they_name_no_personal_data(
    label, staff_client, db
):
    owners = owners_make()
    MAKERS[label.lower()](owners)
    client = staff_client("administrator")
    model = next(m for m in admin.site._registry if m._meta.label == label)
    url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"

    listing = client.get(url)
    first = listing.context["cl"].result_list[0]
    page = client.get(f"{url}{quote(first.pk)}/change/")

    assert listing.status_code == 200 and page.status_code == 200
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    views = StaffView.objects.filter(content_type=content_type)
    if label in NAME_NO_PERSONAL_DATA:
        shown = listing.content.decode() + page.content.decode()
        assert [value for value in _personal_values(owners) if value and value in shown] == []
        assert not views.exists()
        return
    listed = {str(row.pk) for row in listing.context["cl"].result_list}
    assert {view.object_id for view in views.filter(page=url)} == listed
    assert views.filter(object_id=str(first.pk), page__startswith=f"{url}{quote(first.pk)}/change/").exists()
