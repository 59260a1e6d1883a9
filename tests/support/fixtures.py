"""Fixtures several domains' tests share, made with tests/support/factories.py
(loaded for the whole suite by tests/conftest.py; a test folder may define its
own under the same name)."""

import pytest

from bankapi.models import Account, Program
from tests.support.factories import ProgramFactory, SignedIn, customer_user, funded_account, uk_account


@pytest.fixture
def program(db) -> Program:
    """A consumer program with the default limits, international payments on."""
    return ProgramFactory(international_payments_enabled=True)


@pytest.fixture
def customer2(program) -> SignedIn:
    """Another customer of the program: an outsider to the tests' own customer."""
    return customer_user(program)


@pytest.fixture
def customer2_account(customer2) -> Account:
    """The other customer's GBP account, holding 100,000.00."""
    return funded_account(customer2.customer, "100000.00", **uk_account())


@pytest.fixture
def customer2_auth(customer2) -> dict[str, str]:
    return customer2.access
