import time
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from authn.models import User
from bankapi.models import Account, Custodian, Customer
from tests.support.auth import access_header, id_header

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
def custodian_accounts(sandbox) -> list[dict]:
    return sandbox["custodian"]["accounts"]


@pytest.fixture
def custodian_user(sandbox) -> User:
    return User.objects.get(email=sandbox["custodian"]["email"], program_id=sandbox["consumerProgramId"])


@pytest.fixture
def custodian_auth(sandbox) -> dict[str, str]:
    return access_header(sandbox["custodian"]["email"], sandbox["consumerProgramId"])


@pytest.fixture
def management_auth(sandbox) -> dict[str, str]:
    return id_header(sandbox["management"]["email"], None)


@pytest.fixture
def customer2_auth(sandbox) -> dict[str, str]:
    return access_header(sandbox["customer2"]["email"], sandbox["consumerProgramId"])


@pytest.fixture
def custodian(sandbox) -> Custodian:
    return Custodian.objects.get(name="Sandbox Custodian", program_id=sandbox["consumerProgramId"])


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
