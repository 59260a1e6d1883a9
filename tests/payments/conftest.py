from decimal import Decimal

import pytest

from bankapi.models import Account, Customer, IdempotencyRecord, Program
from payments.ledger import ledger_check
from payments.models import Beneficiary, FxRate, PaymentRequest, StatementEntry
from payments.sandbox_fx import SANDBOX_RATES, SANDBOX_SPREAD_BPS
from tests.support.factories import (
    BeneficiaryFactory,
    ProgramFactory,
    SignedIn,
    customer_user,
    funded_account,
    uk_account,
)


def payments_url(customer_id, account_id, what: str = "payments") -> str:
    return f"/v1/customers/{customer_id}/accounts/{account_id}/{what}"


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
def short_reference_account(customer) -> Account:
    """A GBP account of the payer holding 100,000.00 whose references take 35 characters at most."""
    return funded_account(customer, "100000.00", reference_max=35, **uk_account())


@pytest.fixture
def eur_account(customer) -> Account:
    """The payer's EUR account, holding 100,000.00."""
    return funded_account(customer, "100000.00", currency="EUR")


@pytest.fixture
def beneficiary(customer) -> Beneficiary:
    """The payer's saved UK beneficiary."""
    return BeneficiaryFactory(customer=customer, sort_code="040004", account_number="12345678")


@pytest.fixture
def customer_auth(payer) -> dict[str, str]:
    return payer.access


@pytest.fixture
def customer_id_auth(payer) -> dict[str, str]:
    return payer.id


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


def balance(account: Account) -> Decimal:
    return Account.objects.get(id=account.id).balance


class Snapshot:
    """What a rejected request must leave untouched."""

    def __init__(self):
        self.state = self._take()

    @staticmethod
    def _take():
        return (
            dict(Account.objects.values_list("id", "balance")),
            PaymentRequest.objects.count(),
            StatementEntry.objects.count(),
            IdempotencyRecord.objects.count(),
        )

    def unchanged(self) -> bool:
        return self._take() == self.state and ledger_check().ok


@pytest.fixture
def snapshot():
    return Snapshot
