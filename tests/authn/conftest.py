"""The people the authentication stories sign in as, made for each test: the
consumer program's TOTP users, a user with a temporary password, one with no
second factor yet, a business program's user with a PIN, a management user."""

import pytest

from bankapi.models import Program
from tests.support.factories import ProgramFactory
from tests.support.factories_authn import (
    Person,
    management_person,
    person,
    person_with_temporary_password,
    person_without_second_factor,
)

BUSINESS_PIN = "482916"


@pytest.fixture
def consumer_program(db) -> Program:
    return ProgramFactory(international_payments_enabled=True)


@pytest.fixture
def business_program(db) -> Program:
    return ProgramFactory(
        account_type=Program.AccountType.BUSINESS, cardholders_enabled=True, pin_confirmation_enabled=True
    )


@pytest.fixture
def totp_person(consumer_program) -> Person:
    """A customer user of the consumer program with a confirmed TOTP secret."""
    return person(consumer_program)


@pytest.fixture
def other_totp_person(consumer_program) -> Person:
    """Another customer user of the same program, with a confirmed TOTP secret."""
    return person(consumer_program)


@pytest.fixture
def pin_person(business_program) -> Person:
    """A customer user of the business program (PIN confirmation on) with a
    confirmed TOTP secret and a step-up PIN."""
    return person(business_program, pin=BUSINESS_PIN)


@pytest.fixture
def new_person(consumer_program) -> Person:
    """A customer user whose password is temporary and who has no second factor."""
    return person_with_temporary_password(consumer_program)


@pytest.fixture
def setup_person(consumer_program) -> Person:
    """A customer user with a password and no second factor yet."""
    return person_without_second_factor(consumer_program)


@pytest.fixture
def manager(db) -> Person:
    """A management user (no program) with a confirmed TOTP secret."""
    return management_person()
