import pytest

from tests.support.auth import access_header, id_header


@pytest.fixture
def customer_id_token(sandbox) -> dict[str, str]:
    return id_header(sandbox["customer"]["email"], sandbox["consumerProgramId"])


@pytest.fixture
def customer_access_token(sandbox) -> dict[str, str]:
    return access_header(sandbox["customer"]["email"], sandbox["consumerProgramId"])


@pytest.fixture
def customer2_id_token(sandbox) -> dict[str, str]:
    return id_header(sandbox["customer2"]["email"], sandbox["consumerProgramId"])


@pytest.fixture
def business_id_token(sandbox) -> dict[str, str]:
    return id_header(sandbox["business"]["email"], sandbox["businessProgramId"])


@pytest.fixture
def custodian_id_token(sandbox) -> dict[str, str]:
    return id_header(sandbox["custodian"]["email"], sandbox["custodian"]["programId"])


@pytest.fixture
def management_id_token(sandbox) -> dict[str, str]:
    return id_header(sandbox["management"]["email"], None)


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
