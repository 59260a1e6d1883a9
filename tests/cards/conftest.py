"""The sandbox's card customers: `customer` (consumer program: cardholders off, PIN off)
and `business` (business program: cardholders on, PIN on), each with a card on its
`accountId`."""

from dataclasses import dataclass

import pytest

from authn.models import User
from bankapi.models import Account, Program
from cards.models import Card
from tests.support.auth import access_header


@dataclass
class Holder:
    """A sandbox customer as a card test uses it."""

    data: dict
    program_id: str

    @property
    def user(self) -> User:
        return User.objects.get(email=self.data["email"], program_id=self.program_id)

    @property
    def auth(self) -> dict[str, str]:
        return access_header(self.data["email"], self.program_id)

    @property
    def card(self) -> Card:
        return Card.objects.get(id=self.data["cardId"])

    @property
    def account(self) -> Account:
        return Account.objects.get(id=self.data["accountId"])

    @property
    def program(self) -> Program:
        return Program.objects.get(id=self.program_id)

    def account_url(self, what: str, account_id: str | None = None) -> str:
        return (
            f"/v1/customers/{self.data['customerId']}/accounts/{account_id or self.data['accountId']}/{what}"
        )

    def card_url(self, what: str = "", card_id: str | None = None) -> str:
        return self.account_url(f"cards/{card_id or self.data['cardId']}{what}")


@pytest.fixture
def consumer(sandbox) -> Holder:
    return Holder(sandbox["customer"], sandbox["consumerProgramId"])


@pytest.fixture
def consumer2(sandbox) -> Holder:
    return Holder(sandbox["customer2"], sandbox["consumerProgramId"])


@pytest.fixture
def business(sandbox) -> Holder:
    return Holder(sandbox["business"], sandbox["businessProgramId"])


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is False and body["code"] == code and body["message"], body
    return body
