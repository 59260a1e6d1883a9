from decimal import Decimal

import pytest

from bankapi.models import Account, IdempotencyRecord
from payments.ledger import ledger_check
from payments.models import PaymentRequest, StatementEntry
from tests.support import day_clock
from tests.support.factories import (
    funded_account,
    uk_account,
)


def payments_url(customer_id, account_id, what: str = "payments") -> str:
    return f"/v1/customers/{customer_id}/accounts/{account_id}/{what}"


@pytest.fixture
def short_reference_account(customer) -> Account:
    """A GBP account of the payer holding 100,000.00 whose references take 35 characters at most."""
    return funded_account(customer, "100000.00", reference_max=35, **uk_account())


@pytest.fixture
def eur_account(customer) -> Account:
    """The payer's EUR account, holding 100,000.00."""
    return funded_account(customer, "100000.00", currency="EUR")


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


@pytest.fixture
def clear_of_midnight():
    """Statement tests read "today" more than once: their clock stays off a day's
    end (tests/support/day_clock.py), so a run across midnight reads one day."""
    with day_clock.clear_of_midnight() as traveller:
        yield traveller
