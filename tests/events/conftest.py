import pytest


@pytest.fixture
def customer_auth(payer) -> dict[str, str]:
    """The payer's access token (tests/support/fixtures.py)."""
    return payer.access


@pytest.fixture
def customer_id_auth(payer) -> dict[str, str]:
    return payer.id
