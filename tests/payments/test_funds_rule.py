"""The funds rule is one rule: every place that checks it finds the same answer.

What an account may spend (`bankapi.funds.available_balance`: its balance less what its
holds set aside) must cover what is taken from it (`payments.decision.funds_admit`).
The decision checks it in Python, the ledger's conditional UPDATE in SQL
(`payments.decision.funds_sql`, on SQLite rounded to cents), the bulk writer and
the holds on locked rows. Each row of the table is an account (balance, held)
and what is taken; every path must admit it exactly when the decision does.
"""

import uuid
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from bankapi.models import Account
from payments.decision import Snapshot, funds_refusal
from payments.ledger import (
    HoldOrder,
    LedgerError,
    Leg,
    Movement,
    holds_place,
    ledger_post_many,
    lock_accounts,
    system_account_for,
)
from payments.ledger.balances import balance_statement
from payments.models import LedgerTransaction, SystemAccount
from tests.support.factories import funded_account

pytestmark = pytest.mark.django_db

# (balance, held, taken, admitted)
CASES = [
    ("100.00", "0.00", "100.00", True),
    ("100.00", "0.00", "100.01", False),
    ("100.00", "40.00", "60.00", True),
    ("100.00", "40.00", "60.01", False),
    ("100.00", "100.00", "0.01", False),
    ("100.00", "99.99", "0.01", True),
    # Sums SQLite would get wrong as binary floating point: 0.03 - 0.01, 0.30 - 0.10.
    ("0.03", "0.01", "0.02", True),
    ("0.03", "0.01", "0.03", False),
    ("0.30", "0.10", "0.20", True),
    ("0.30", "0.10", "0.21", False),
    # A credit (nothing taken) is admitted even with everything held.
    ("5.00", "5.00", "-2.50", True),
]


def _passes(attempt) -> bool:
    """Whether `attempt` passes (a LedgerError or False: it does not), its writes undone."""
    with transaction.atomic():
        try:
            passed = attempt()
        except LedgerError:
            passed = False
        transaction.set_rollback(True)
    return passed


def _account_holding(customer, balance: str, held: str) -> Account:
    account = funded_account(customer, balance)
    if Decimal(held):
        with transaction.atomic():
            locked = lock_accounts([account.id])
            holds_place(
                [HoldOrder(id=uuid.uuid4(), account_id=account.id, amount=Decimal(held))],
                locked=locked,
                now=timezone.now(),
            )
    return Account.objects.get(id=account.id)


def _by_the_decision(account: Account, taken: Decimal) -> bool:
    return funds_refusal(Snapshot.of(account), taken, "it needs more") is None


def _by_the_statement(account: Account, taken: Decimal) -> bool:
    connection = transaction.get_connection()
    with connection.cursor() as cursor:
        cursor.execute(*balance_statement(connection, account.id, -taken, timezone.now(), None))
        return cursor.fetchone() is not None


def _by_the_bulk_writer(account: Account, taken: Decimal) -> bool:
    locked = lock_accounts([account.id])
    external = system_account_for(account.program_id, account.sandbox, SystemAccount.Kind.EXTERNAL, "GBP")
    legs = [Leg(-taken, "GBP", account=locked[account.id]), Leg(taken, "GBP", system_account=external)]
    ledger_post_many(
        program_id=account.program_id,
        sandbox=account.sandbox,
        movements=[Movement(kind=LedgerTransaction.Kind.FUNDING, legs=legs)],
        locked=locked,
    )
    return True


def _by_a_hold(account: Account, taken: Decimal) -> bool:
    locked = lock_accounts([account.id])
    holds_place(
        [HoldOrder(id=uuid.uuid4(), account_id=account.id, amount=taken)], locked=locked, now=timezone.now()
    )
    return True


@pytest.mark.parametrize(("balance", "held", "taken", "admitted"), CASES)
def test_every_path_of_the_funds_rule_finds_the_same_answer(customer, balance, held, taken, admitted):
    account = _account_holding(customer, balance, held)
    amount = Decimal(taken)
    paths = {
        "decision": _by_the_decision,
        "statement": _by_the_statement,
        "bulk writer": _by_the_bulk_writer,
    }
    if amount > 0:
        # A hold is of a positive amount.
        paths["hold"] = _by_a_hold

    found = {name: _passes(lambda path=path: path(account, amount)) for name, path in paths.items()}

    assert found == dict.fromkeys(paths, admitted)
    assert Account.objects.get(id=account.id).balance == Decimal(balance)
