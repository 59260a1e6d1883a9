"""Tenancy is set when a row is made and never changes: no back-office change form
edits a program, an environment or an owner link (a customer's program, sandbox
and custodian, an account's customer, a user's program and party, ...).

The first test walks every admin the site registers, inlines included, so an
admin added later cannot forget; the others post a moved customer and a moved
user to their change forms and find nothing moved.
"""

import pytest
from django.contrib import admin
from django.test import RequestFactory
from django.urls import resolve

from approvals.models import ApprovalPolicy
from authn.models import User
from bankapi.backoffice.admin_base import tenancy_fields
from bankapi.models import Account, Custodian, Customer, Program
from onboarding.models import LegalDocumentSet, ProgramOnboarding
from payments.models import Beneficiary
from tests.backoffice.conftest import admin_url
from tests.support.factories import ProgramFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser() -> User:
    return User.objects.create_superuser("root@backoffice.example", "Root-Password-4242")


def as_superuser(superuser: User):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    return request


def test_tenancy_fields_name_every_link_to_a_tenant():
    """What the walk below checks for (so that it cannot pass by finding nothing)."""
    assert set(tenancy_fields(Customer)) == {"program", "sandbox", "custodian"}
    assert set(tenancy_fields(Account)) == {"program", "sandbox", "customer"}
    assert set(tenancy_fields(User)) == {"program", "sandbox", "customer", "custodian"}
    assert set(tenancy_fields(ApprovalPolicy)) == {"program", "sandbox", "customer", "custodian"}
    assert tenancy_fields(Program) == ()


def test_no_admin_change_form_edits_a_tenancy_field_and_add_forms_still_set_them(superuser):
    request = as_superuser(superuser)
    editable: dict[str, set[str]] = {}
    walked = set()
    for model, model_admin in admin.site._registry.items():
        row = model()
        # As on its change page (some forms read the object id from the URL).
        request.resolver_match = resolve(admin_url(model, "00000000-0000-0000-0000-000000000000/change/"))
        if not model_admin.has_change_permission(request, row):
            continue  # shown read-only: nothing on it can change
        walked.add(model)
        form = model_admin.get_form(request, row, change=True)
        moved = set(form.base_fields) & set(tenancy_fields(model))
        if moved:
            editable[type(model_admin).__name__] = moved
        for inline in model_admin.get_inline_instances(request, row):
            formset = inline.get_formset(request, row)
            own = set(tenancy_fields(inline.model)) - {formset.fk.name}
            moved = set(formset.form.base_fields) & own
            if moved:
                editable[type(inline).__name__] = moved

    assert editable == {}, f"tenancy fields editable on a change form: {editable}"
    assert {Customer, Custodian, Account, User, Beneficiary, ApprovalPolicy, LegalDocumentSet} <= walked
    assert ProgramOnboarding in walked
    customer_add = admin.site._registry[Customer].get_form(request, None, change=False)
    assert {"program", "sandbox", "custodian"} <= set(customer_add.base_fields)


def test_posting_a_changed_program_and_sandbox_to_a_customer_moves_nothing(client, superuser):
    consumer, business = ProgramFactory(), ProgramFactory(account_type=Program.AccountType.BUSINESS)
    customer = Customer.objects.create(program=consumer, sandbox=True, name="Stays Put")
    user = UserFactory(program_id=consumer.id, customer=customer)
    client.force_login(superuser)
    url = admin_url(Customer, f"{customer.id}/change/")

    page = client.get(url)
    answer = client.post(
        url, {"name": "Renamed", "kind": Customer.Kind.INDIVIDUAL, "program": str(business.id)}
    )  # sandbox absent: the checkbox unticked

    assert page.status_code == 200 and 'name="program"' not in page.content.decode()
    assert answer.status_code == 302, answer.content.decode()[:2000]
    customer.refresh_from_db()
    assert (customer.name, customer.program_id, customer.sandbox) == ("Renamed", consumer.id, True)
    user.refresh_from_db()
    assert (user.program_id, user.customer_id, user.sandbox) == (consumer.id, customer.id, True)


def test_posting_another_program_and_customer_to_a_user_moves_nothing(client, superuser):
    consumer, business = ProgramFactory(), ProgramFactory(account_type=Program.AccountType.BUSINESS)
    customer = Customer.objects.create(program=consumer, sandbox=True, name="Mine")
    elsewhere = Customer.objects.create(program=business, sandbox=False, name="Theirs")
    user = UserFactory(program_id=consumer.id, customer=customer)
    client.force_login(superuser)
    url = admin_url(User, f"{user.id}/change/")
    form = {
        "email": user.email,
        "role": user.role,
        "first_name": "Moved",
        "last_name": "",
        "is_active": "on",
        "email_verified": "on",
        "program": str(business.id),
        "customer": str(elsewhere.id),
    }  # sandbox absent: the checkbox unticked

    answer = client.post(url, form)

    assert answer.status_code == 302, answer.content.decode()[:2000]
    user.refresh_from_db()
    assert user.first_name == "Moved"
    assert (user.program_id, user.customer_id, user.sandbox) == (consumer.id, customer.id, True)
