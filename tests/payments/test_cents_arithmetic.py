"""Amounts the database adds and subtracts stay whole cents on every database.

SQLite (the embedded default) adds decimal columns as binary floating point:
without rounding, 0.03 − 0.01 left 0.019999999999999997, so a payment of the
exact 0.02 left was refused, and giving back two failed payments' amounts took
the day's count below zero.
"""

import uuid
from decimal import Decimal

import pytest

from bankapi.models import Account
from payments.ledger import ledger_check
from payments.models import PaymentRequest
from payments.services.settlement import payment_fail
from tests.payments.conftest import payments_url
from tests.support.factories import BeneficiaryFactory, funded_account

pytestmark = pytest.mark.django_db


def _pay(api, auth, account, beneficiary, amount):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Cents", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


@pytest.mark.parametrize(
    "funds, amounts",
    [
        ("0.03", ["0.01", "0.02"]),
        ("0.30", ["0.10", "0.20"]),
        ("1.00", ["0.10"] * 10),
        ("100.07", ["33.33", "33.37", "0.07", "33.30"]),
    ],
)
def test_the_exact_balance_left_can_be_paid_and_failed_payments_give_it_back(
    api, customer, customer_auth, funds, amounts
):
    account = funded_account(customer, funds)
    beneficiary = BeneficiaryFactory(customer=customer)

    answers = [_pay(api, customer_auth, account, beneficiary, amount) for amount in amounts]

    assert [answer.status_code for answer in answers] == [200] * len(amounts), [a.json() for a in answers]
    account.refresh_from_db()
    assert account.balance == Decimal("0.00")
    assert account.outbound_total == Decimal(funds)
    refused = _pay(api, customer_auth, account, beneficiary, "0.01")
    assert (refused.status_code, refused.json()["code"]) == (422, "INSUFFICIENT_FUNDS")

    for answer in answers:
        payment_fail(
            PaymentRequest.objects.get(id=answer.json()["data"]["bankTransfer"]["requestId"]), "Returned"
        )

    account = Account.objects.get(id=account.id)
    assert (account.balance, account.outbound_total) == (Decimal(funds), Decimal("0.00"))
    assert ledger_check().ok
