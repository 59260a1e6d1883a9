"""Onboarding's cast, made per test: the payer (the suite's customer) with an
individual application, customer2 (same program) with one of its own, and the
business customer (another program) with a company application and two UBOs.
Onboarding routes take the ID token: `applicant.id`, `customer_id_token`."""

import pytest

from bankapi.models import Program
from tests.support.factories import SignedIn, custodian_with_clients
from tests.support.factories_onboarding import Applicant, applicant_of, legal_document_set


@pytest.fixture
def applicant(payer) -> Applicant:
    """The payer and its individual application."""
    return applicant_of(payer)


@pytest.fixture
def applicant2(customer2) -> Applicant:
    """customer2 (the payer's program) and its individual application."""
    return applicant_of(customer2)


@pytest.fixture
def business_applicant(business) -> Applicant:
    """The business customer, a company named Test Business Ltd, and its company
    application with two PENDING UBOs."""
    company = business.customer
    company.name = "Test Business Ltd"
    company.save(update_fields=["name"])
    return applicant_of(business, is_company=True, ubos=2)


@pytest.fixture
def legal_sets(program, business) -> None:
    """A current legal set for the payer's program and for the business program."""
    legal_document_set(program)
    legal_document_set(Program.objects.get(id=business.program_id))


@pytest.fixture
def customer_id_token(payer) -> dict[str, str]:
    return payer.id


@pytest.fixture
def customer_access_token(payer) -> dict[str, str]:
    return payer.access


@pytest.fixture
def customer2_id_token(customer2) -> dict[str, str]:
    return customer2.id


@pytest.fixture
def business_id_token(business) -> dict[str, str]:
    return business.id


@pytest.fixture
def custodian_id_token(program) -> dict[str, str]:
    return custodian_with_clients(program, clients=0).person.id


@pytest.fixture
def management_id_token(management: SignedIn) -> dict[str, str]:
    return management.id


@pytest.fixture
def local_storage(settings, tmp_path):
    """Documents kept by this service (no S3), in a temporary folder: its path."""
    settings.AWS_STORAGE_BUCKET_NAME = None
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path},
        },
    }
    return tmp_path
