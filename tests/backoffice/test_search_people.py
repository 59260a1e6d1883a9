"""An operator finds a caller by what the caller gives: part of a name or e-mail, in
any case, or an IBAN as printed; each such search is a read of personal data, kept
with its text in the staff-view records."""

import pytest
from django.contrib.contenttypes.models import ContentType

from audit.models import StaffView
from bankapi.models import Account, Customer
from tests.support.factories import BeneficiaryFactory, ProgramFactory, customer_user, funded_account

SUPPORT = "support@backoffice.example"


def _views(model) -> list[tuple[str, str, str]]:
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    return [
        (view.object_id, view.search, view.actor_email)
        for view in StaffView.objects.filter(content_type=content_type).order_by("id")
    ]


def _found(page) -> list:
    assert page.status_code == 200
    return [row.pk for row in page.context["cl"].result_list]


@pytest.fixture
def people(db):
    program = ProgramFactory()
    smith = customer_user(program, email="margaret.smith@example.com")
    jones = customer_user(program, email="tom.jones@example.com")
    Customer.objects.filter(pk=smith.customer.pk).update(name="Mrs Margaret Smith")
    Customer.objects.filter(pk=jones.customer.pk).update(name="Tom Jones")
    smith.user.first_name, smith.user.last_name = "Margaret", "Smith"
    smith.user.save()
    account = funded_account(smith.customer, "10.00", iban="GB29NWBK60161331926819")
    funded_account(jones.customer, "10.00", iban="GB94BARC10201530093459")
    return smith, jones, account


def test_a_customer_is_found_by_part_of_the_name_in_any_case(people, staff_client):
    smith, _, _ = people
    client = staff_client("support")

    found = _found(client.get("/admin/bankapi/customer/", {"q": "  smith "}))
    none = _found(client.get("/admin/bankapi/customer/", {"q": "smyth"}))

    assert found == [smith.customer.pk] and none == []
    assert _views(Customer) == [(str(smith.customer.pk), "  smith ", SUPPORT), ("", "smyth", SUPPORT)]


def test_a_user_is_found_by_part_of_the_email_or_by_first_and_last_name(people, staff_client):
    smith, jones, _ = people
    client = staff_client("support")

    by_email = _found(client.get("/admin/authn/user/", {"q": "MARGARET.SMITH@"}))
    by_name = _found(client.get("/admin/authn/user/", {"q": "margaret smith"}))
    by_domain = _found(client.get("/admin/authn/user/", {"q": "@example.com"}))

    assert by_email == [smith.user.pk] and by_name == [smith.user.pk]
    assert set(by_domain) >= {smith.user.pk, jones.user.pk}
    from authn.models import User

    searches = [(object_id, search) for object_id, search, _ in _views(User)]
    assert searches[:2] == [(str(smith.user.pk), "MARGARET.SMITH@"), (str(smith.user.pk), "margaret smith")]
    assert {search for _, search in searches[2:]} == {"@example.com"}


def test_an_account_is_found_by_its_iban_as_printed_or_its_account_number(people, staff_client):
    _, _, account = people
    client = staff_client("support")

    printed = _found(client.get("/admin/bankapi/account/", {"q": "gb29 nwbk 6016 1331 9268 19"}))
    Account.objects.filter(pk=account.pk).update(sort_code="040004", account_number="31926819")
    by_number = _found(client.get("/admin/bankapi/account/", {"q": "31926819"}))
    part = _found(client.get("/admin/bankapi/account/", {"q": "GB29NWBK"}))

    assert printed == [account.pk] and by_number == [account.pk] and part == []
    assert _views(Account)[:2] == [
        (str(account.pk), "gb29 nwbk 6016 1331 9268 19", SUPPORT),
        (str(account.pk), "31926819", SUPPORT),
    ]


def test_beneficiaries_cardholders_and_ubos_are_found_by_name_or_email(people, staff_client, account):
    from cards.models import Cardholder
    from onboarding.models import Ubo
    from tests.support.factories_onboarding import company_application

    payee = BeneficiaryFactory(customer=account.customer, name="Acme Widgets Ltd")
    BeneficiaryFactory(customer=account.customer, name="Other Payee")
    holder = Cardholder.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        account=account,
        first_name="Ann",
        last_name="Holder",
        email="ann.holder@example.com",
    )
    application = company_application(account.customer)
    ubo = Ubo.objects.create(
        application=application, first_name="Owen", last_name="Owner", email="o@x.example"
    )
    client = staff_client("support")

    assert _found(client.get("/admin/payments/beneficiary/", {"q": "acme widgets"})) == [payee.pk]
    assert _found(client.get("/admin/cards/cardholder/", {"q": "ANN.HOLDER"})) == [holder.pk]
    assert _found(client.get("/admin/onboarding/ubo/", {"q": "owen owner"})) == [ubo.pk]
    assert _views(Ubo) == [(str(ubo.pk), "owen owner", SUPPORT)]
