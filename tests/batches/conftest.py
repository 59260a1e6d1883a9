import time
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from authn.models import User
from bankapi.models import Account, Custodian, Customer, Program
from tests.support.factories import (
    CustodianSetup,
    ProgramFactory,
    SignedIn,
    custodian_with_clients,
    customer_user,
    funded_account,
    uk_account,
)

URL = "/v1/batch-payments"
PAYEE_UK = {
    "name": "Jane Payee",
    "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
}
PAYEE_IBAN = {
    "name": "Hans Payee",
    "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
}


def payment(account: dict | Account, amount: str = "10.00", reference: str = "Invoice 1", payee=None) -> dict:
    if isinstance(account, Account):
        sort_code, number = account.sort_code, account.account_number
    else:
        sort_code, number = account["sortCode"], account["accountNumber"]
    return {
        "payer": {"account": {"type": "uk", "sortCode": sort_code, "accountNumber": number}},
        "payee": payee or PAYEE_UK,
        "reference": reference,
        "amount": amount,
    }


class CommittingClient(APIClient):
    """An API client whose requests run their after-commit work (queued tasks)
    when they end, as a real commit would: tests in a rolled-back transaction
    otherwise never see it."""

    capture = None

    def request(self, **kwargs):
        with self.capture(execute=True):
            return super().request(**kwargs)


@pytest.fixture
def api(django_capture_on_commit_callbacks) -> APIClient:
    client = CommittingClient()
    client.capture = django_capture_on_commit_callbacks
    return client


@pytest.fixture
def plain_api() -> APIClient:
    return APIClient()


@pytest.fixture
def custodian_setup(program) -> CustodianSetup:
    """A custodian with a signed-in user (TOTP) and two clients holding 100,000.00 GBP each."""
    return custodian_with_clients(program, clients=2, balance="100000.00")


@pytest.fixture
def custodian_accounts(custodian_setup) -> list[dict]:
    return [
        {
            "customerId": str(account.customer_id),
            "accountId": str(account.id),
            "sortCode": account.sort_code,
            "accountNumber": account.account_number,
        }
        for account in custodian_setup.accounts
    ]


@pytest.fixture
def custodian_user(custodian_setup) -> User:
    return custodian_setup.user


@pytest.fixture
def custodian_auth(custodian_setup) -> dict[str, str]:
    return custodian_setup.person.access


@pytest.fixture
def custodian(custodian_setup) -> Custodian:
    return custodian_setup.custodian


@pytest.fixture
def management_auth(management) -> dict[str, str]:
    return management.id


@pytest.fixture
def customer(program) -> SignedIn:
    """A customer of the program (no custodian) with a TOTP-confirmed user."""
    return customer_user(program)


@pytest.fixture
def customer_account(customer) -> Account:
    """The customer's GBP account, holding 100,000.00, named by sort code and number."""
    return funded_account(customer.customer, "100000.00", **uk_account())


@pytest.fixture
def customer_auth(customer) -> dict[str, str]:
    return customer.access


@pytest.fixture
def business_program(db) -> Program:
    """A business program that offers the PIN confirmation."""
    return ProgramFactory(account_type=Program.AccountType.BUSINESS, pin_confirmation_enabled=True)


@pytest.fixture
def business(business_program) -> SignedIn:
    """A company customer of the business program."""
    person = customer_user(business_program)
    Customer.objects.filter(id=person.customer.id).update(kind=Customer.Kind.COMPANY)
    return person


def balance(account_id) -> Decimal:
    return Account.objects.get(id=account_id).balance


def other_custodian_with_account(program_id, name="Other Custodian") -> tuple[Custodian, Account]:
    custodian = Custodian.objects.create(program_id=program_id, name=name)
    customer = Customer.objects.create(program_id=program_id, name=f"{name} Client", custodian=custodian)
    account = Account.objects.create(
        program_id=program_id,
        customer=customer,
        name="Other GBP",
        currency="GBP",
        sort_code="112233",
        account_number="44556677",
    )
    return custodian, account


def verify(api, auth, payments, url=URL) -> str:
    response = api.post(url, {"action": "verify", "payments": payments}, format="json", **auth)
    assert response.status_code == 200, response.json()
    return response.json()["requestId"]


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")
