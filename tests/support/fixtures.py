"""Fixtures several domains' tests share, made with tests/support/factories.py
(loaded for the whole suite by tests/conftest.py; a test folder may define its
own under the same name): a program, the payer (a customer of it) with its
accounts and beneficiary, another customer of the program, the starting FX rate
table, the payer's token headers (`customer_auth`, `customer_id_auth`), and a
production customer of the program with its account (`production_auth`)."""

import pytest

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account, Customer, Program
from payments.models import Beneficiary, FxRate
from payments.sandbox_fx import SANDBOX_RATES, SANDBOX_SPREAD_BPS
from tests.support.factories import (
    BeneficiaryFactory,
    ProgramFactory,
    SignedIn,
    customer_user,
    funded_account,
    management_user,
    uk_account,
)


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


@pytest.fixture
def fx_rates(db) -> None:
    """The rate table a new deployment starts with: GBP/EUR 1.17, GBP/USD 1.27 and
    EUR/USD 1.0855 at mid, 25 basis points of spread."""
    for base, quote, mid in SANDBOX_RATES:
        FxRate.objects.get_or_create(
            base_currency=base,
            quote_currency=quote,
            defaults={"mid_rate": mid, "spread_bps": SANDBOX_SPREAD_BPS},
        )


@pytest.fixture
def payer(program) -> SignedIn:
    """The customer the tests pay for, and its TOTP-confirmed user."""
    return customer_user(program)


@pytest.fixture
def customer_auth(payer) -> dict[str, str]:
    """The payer's access-token header."""
    return payer.access


@pytest.fixture
def customer_id_auth(payer) -> dict[str, str]:
    """The payer's ID-token header (what onboarding routes take)."""
    return payer.id


@pytest.fixture
def customer(payer) -> Customer:
    return payer.customer


@pytest.fixture
def account(customer) -> Account:
    """The payer's GBP account, holding 100,000.00."""
    return funded_account(customer, "100000.00", **uk_account())


@pytest.fixture
def low_account(customer) -> Account:
    """A GBP account of the payer holding 5.00."""
    return funded_account(customer, "5.00", **uk_account())


@pytest.fixture
def beneficiary(customer) -> Beneficiary:
    """The payer's saved UK beneficiary."""
    return BeneficiaryFactory(customer=customer, sort_code="040004", account_number="12345678")


@pytest.fixture
def customer2_beneficiary(customer2) -> Beneficiary:
    return BeneficiaryFactory(customer=customer2.customer)


@pytest.fixture
def business(db) -> SignedIn:
    """A customer of another (business) program."""
    return customer_user(ProgramFactory(account_type=Program.AccountType.BUSINESS))


@pytest.fixture
def business_auth(business) -> dict[str, str]:
    return business.access


@pytest.fixture
def management(db) -> SignedIn:
    """A management user (no program of its own)."""
    return management_user()


@pytest.fixture
def production_auth(customer) -> tuple[dict[str, str], Account]:
    """A production customer of the consumer program, with its own account."""
    production = Customer.objects.create(program_id=customer.program_id, sandbox=False, name="Live Customer")
    account = funded_account(production, "100.00")
    user = User.objects.create(
        email="live@example.com", program_id=customer.program_id, sandbox=False, customer=production
    )
    return {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(user).access_token}"}, account
