"""Test data the back-office and proof tests need beyond tests/support/factories.py:
onboarding applications (with a company's beneficial owners), the operator staff
user (administrator group) and a business customer's world.

    application = application_of(payer.customer, workflow_stage="IN_REVIEW")
    owners = company_application(business.customer).ubos.all()
"""

from django.contrib.auth.models import Group

from authn.models import User
from bankapi.models import Customer
from onboarding.models import Application, Ubo
from onboarding.providers import DEFAULT_PROVIDER

OPERATOR_PASSWORD = "Operator-Password-4242"

# A company application's beneficial owners, each PENDING.
OWNERS = [("Alice", "Owner", "alice.owner@example.com"), ("Bob", "Partner", "bob.partner@example.com")]


def application_of(customer: Customer, *, is_company: bool = False, **fields) -> Application:
    """An onboarding application of the customer (the provider's default, stage NEW
    unless `workflow_stage` says otherwise)."""
    return Application.objects.create(
        program_id=customer.program_id,
        sandbox=customer.sandbox,
        customer=customer,
        is_company=is_company,
        applicant_email=fields.pop("applicant_email", f"applicant.{customer.id}@example.test"),
        verification_provider=DEFAULT_PROVIDER,
        **fields,
    )


def company_application(customer: Customer) -> Application:
    """A company application of the customer with two beneficial owners in PENDING."""
    application = application_of(customer, is_company=True)
    Ubo.objects.bulk_create(
        Ubo(application=application, first_name=first, last_name=last, email=email)
        for first, last, email in OWNERS
    )
    return application


def operator_user(email: str = "operator@backoffice.example", password: str = OPERATOR_PASSWORD) -> User:
    """A management user who signs in to the back office, in the administrator group
    (every permission) and not a superuser."""
    user = User.objects.create_user(email, password, role="management", is_staff=True)
    user.groups.add(Group.objects.get(name="administrator"))
    return user
