"""Card customers, each with a card on its main account: `consumer` and `consumer2`
(one consumer program: cardholders off, PIN off) and `business` (a business
program: cardholders on, PIN on, the user has a PIN)."""

import pytest

from bankapi.models import Customer, Program
from tests.support.factories_cards import CardCustomer, business_card_program, card_customer, card_program

BUSINESS_PIN = "482916"


@pytest.fixture
def consumer_program(db) -> Program:
    return card_program(international_payments_enabled=True)


@pytest.fixture
def consumer(consumer_program) -> CardCustomer:
    return card_customer(consumer_program, "Ada Lovelace")


@pytest.fixture
def consumer2(consumer_program) -> CardCustomer:
    """Another customer of the consumer's program."""
    return card_customer(consumer_program, "Charles Babbage")


@pytest.fixture
def business(db) -> CardCustomer:
    return card_customer(
        business_card_program(), "Analytical Engines Ltd", Customer.Kind.COMPANY, pin=BUSINESS_PIN
    )


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is False and body["code"] == code and body["message"], body
    return body
