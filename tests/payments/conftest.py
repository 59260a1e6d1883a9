from decimal import Decimal

import pytest

from bankapi.models import Account, Customer, IdempotencyRecord
from payments.ledger import ledger_check
from payments.models import PaymentRequest, StatementEntry
from tests.support.auth import access_header


def payments_url(customer_id, account_id, what: str = "payments") -> str:
    return f"/v1/customers/{customer_id}/accounts/{account_id}/{what}"


@pytest.fixture
def customer(sandbox) -> Customer:
    return Customer.objects.get(id=sandbox["customer"]["customerId"])


@pytest.fixture
def account(sandbox) -> Account:
    return Account.objects.get(id=sandbox["customer"]["accountId"])


@pytest.fixture
def customer2_auth(sandbox) -> dict[str, str]:
    return access_header(sandbox["customer2"]["email"], sandbox["consumerProgramId"])


@pytest.fixture
def business_auth(sandbox) -> dict[str, str]:
    return access_header(sandbox["business"]["email"], sandbox["businessProgramId"])


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
