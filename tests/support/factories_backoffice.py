"""Test data the back-office and proof tests need beyond tests/support/factories.py:
onboarding applications (with a company's beneficial owners), a program's current
legal documents, and the operator staff user (administrator group).

    application = application_of(payer.customer, workflow_stage="IN_REVIEW")
    owners = company_application(business.customer).ubos.all()
"""

from datetime import date

from django.contrib.auth.models import Group

from authn.models import User
from bankapi.models import Customer, Program
from onboarding.models import Application, LegalDocument, LegalDocumentSet, Ubo
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


def legal_documents(program: Program, version: str = "2026-01") -> LegalDocumentSet:
    """The program's current legal document set: terms and privacy required,
    marketing optional, and for a business program business-terms (required,
    business accounts only)."""
    document_set = LegalDocumentSet.objects.create(
        program=program, sandbox=True, version=version, last_updated=date(2026, 1, 1), is_current=True
    )
    both = ["consumer", "business"]
    documents = [
        ("terms", "Terms and Conditions", True, both),
        ("privacy", "Privacy Notice", True, both),
        ("marketing", "Marketing Preferences", False, both),
    ]
    if program.account_type == Program.AccountType.BUSINESS:
        documents.append(("business-terms", "Business Account Terms", True, ["business"]))
    for key, name, required, applicable_to in documents:
        LegalDocument.objects.create(
            document_set=document_set,
            key=key,
            version="1.0",
            name=name,
            required=required,
            applicable_to=applicable_to,
            effective_date=date(2026, 1, 1),
            content=f"{name}\n\nTest text of {program.name}. Not a real agreement.\n".encode(),
        )
    return document_set
