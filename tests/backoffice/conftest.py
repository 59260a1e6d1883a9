"""Back office: staff users of each group, held payments, the changelist URL of a model.

The payer, its `account` (GBP, 100,000.00) and the program come from the suite's
fixtures (tests/support/fixtures.py); API calls a test makes act as the payer."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from authn.models import User
from bankapi.models import Account
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.support.factories_backoffice import operator_user

STAFF_PASSWORD = "Staff-Password-4242"


def staff_user(group: str | None, email: str | None = None) -> User:
    user = User.objects.create_user(
        email or f"{group or 'nogroup'}@backoffice.example",
        STAFF_PASSWORD,
        role="management",
        is_staff=True,
    )
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def staff_client(client, db):
    """A client signed in as a new staff member of the named group."""

    def sign_in(group: str | None):
        client.force_login(staff_user(group))
        return client

    return sign_in


@pytest.fixture
def operator(db) -> User:
    """A staff user in the administrator group, not a superuser."""
    return operator_user()


def held_payments(account: Account, count: int, amount: str = "12000.00") -> list:
    instruction = PaymentInstruction(amount=Decimal(amount), currency="GBP", reference="Large invoice")
    return [payment_accept(account=account, instruction=instruction) for _ in range(count)]


def pending_payment(account: Account, amount: str = "25.00"):
    instruction = PaymentInstruction(amount=Decimal(amount), currency="GBP", reference="Small invoice")
    return payment_accept(account=account, instruction=instruction)


def admin_url(model, view: str = "changelist") -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/" + (
        "" if view == "changelist" else view
    )
