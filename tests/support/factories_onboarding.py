"""Onboarding test data: a customer's application (with UBOs for a company) and a
program's current legal document set. Built on
tests/support/factories.py; every call makes new rows.

    person = customer_user(program)
    applicant = applicant_of(person)            # an individual application
    legal_document_set(program)                 # terms, privacy, marketing
    api.get(f"/v1/applications/{applicant.application_id}", **applicant.id)
"""

from dataclasses import dataclass
from datetime import date

import factory
from factory.django import DjangoModelFactory

from bankapi.models import Customer, Program
from onboarding.models import Application, LegalDocument, LegalDocumentSet, Ubo
from onboarding.providers import DEFAULT_PROVIDER
from tests.support.factories import SignedIn


class ApplicationFactory(DjangoModelFactory):
    """A NEW application of `customer` (required) with the default verification
    provider, as POST /v1/applications makes one."""

    class Meta:
        model = Application

    customer = None
    program_id = factory.LazyAttribute(lambda o: o.customer.program_id)
    sandbox = factory.LazyAttribute(lambda o: o.customer.sandbox)
    is_company = False
    applicant_email = factory.Sequence(lambda n: f"applicant{n}@example.test")
    verification_provider = DEFAULT_PROVIDER


class UboFactory(DjangoModelFactory):
    """A PENDING UBO of a company `application` (required)."""

    class Meta:
        model = Ubo

    application = None
    first_name = factory.Sequence(lambda n: f"Owner{n}")
    last_name = "Test"
    email = factory.Sequence(lambda n: f"owner{n}@example.test")


@dataclass
class Applicant:
    """A signed-in customer and one application of its own."""

    person: SignedIn
    application: Application

    @property
    def application_id(self) -> str:
        return str(self.application.id)

    @property
    def customer_id(self) -> str:
        return str(self.person.customer.id)

    @property
    def program_id(self) -> str:
        return str(self.person.program_id)

    @property
    def email(self) -> str:
        return self.person.email

    @property
    def id(self) -> dict[str, str]:
        """ID-token header: what onboarding routes take."""
        return self.person.id

    @property
    def access(self) -> dict[str, str]:
        return self.person.access

    @property
    def ubos(self) -> list[Ubo]:
        return list(Ubo.objects.filter(application=self.application))


def application_of(customer: Customer, *, is_company: bool = False, **fields) -> Application:
    """An application of the customer (stage NEW unless `workflow_stage` says
    otherwise), made out to its own e-mail unless `applicant_email` is given."""
    return ApplicationFactory(customer=customer, is_company=is_company, **fields)


# A company application's beneficial owners, each PENDING.
OWNERS = [("Alice", "Owner", "alice.owner@example.com"), ("Bob", "Partner", "bob.partner@example.com")]


def company_application(customer: Customer) -> Application:
    """A company application of the customer with two PENDING beneficial owners (`OWNERS`)."""
    application = application_of(customer, is_company=True)
    for first, last, email in OWNERS:
        UboFactory(application=application, first_name=first, last_name=last, email=email)
    return application


def applicant_of(person: SignedIn, *, is_company: bool = False, ubos: int = 0) -> Applicant:
    """An application of the person's customer, made out to its e-mail; a company
    one gets `ubos` PENDING UBOs."""
    application = ApplicationFactory(
        customer=person.customer, is_company=is_company, applicant_email=person.email
    )
    for _ in range(ubos):
        UboFactory(application=application)
    return Applicant(person=person, application=application)


LEGAL_SET_DATE = date(2026, 1, 1)


def legal_document_set(program: Program, version: str = "2026-01") -> LegalDocumentSet:
    """The program's current legal set: terms and privacy required, marketing
    optional, all for both account types; a business program's set adds
    business-terms (required, business only)."""
    both = ["consumer", "business"]
    documents = [("terms", "Terms and Conditions", True, both), ("privacy", "Privacy Notice", True, both)]
    documents.append(("marketing", "Marketing Preferences", False, both))
    if program.account_type == Program.AccountType.BUSINESS:
        documents.append(("business-terms", "Business Account Terms", True, ["business"]))
    document_set = LegalDocumentSet.objects.create(
        program=program, sandbox=True, version=version, last_updated=LEGAL_SET_DATE, is_current=True
    )
    for key, name, required, applicable_to in documents:
        LegalDocument.objects.create(
            document_set=document_set,
            key=key,
            version="1.0",
            name=name,
            required=required,
            applicable_to=applicable_to,
            effective_date=LEGAL_SET_DATE,
            content=f"{name}, version 1.0, of {program.name}.\n".encode(),
        )
    return document_set


def legal_set_accepted(application: Application, document_set: LegalDocumentSet) -> None:
    """The application with every document of `document_set` accepted now, as the
    legal acceptance route stores it."""
    from django.utils import timezone

    from onboarding.acceptance import AcceptedLegalDocument, LegalAcceptance

    documents = tuple(
        AcceptedLegalDocument(
            document_id=document.id,
            key=document.key,
            version=document.version,
            hash=document.hash,
            name=document.name,
            required=document.required,
            applicable_to=tuple(document.applicable_to),
            effective_date=document.effective_date,
        )
        for document in document_set.documents.all()
    )
    application.legal_documents_acceptance = LegalAcceptance(
        document_set_version=document_set.version, accepted_at=timezone.now(), documents=documents
    ).to_stored()
    application.save(update_fields=["legal_documents_acceptance"])
