"""A movement's legs and the rules every movement keeps (see `payments.ledger`):
each leg names one account and moves a non-zero amount in its currency, each
currency's legs sum to zero, and a counted debit (`Outbound`) is a debit."""

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.models import ZERO, Account
from payments.decision import DailyCount
from payments.models import SystemAccount


@dataclass(frozen=True)
class Leg:
    """One side of a movement: a customer account or a system account."""

    amount: Decimal
    currency: str
    account: Account | None = None
    system_account: SystemAccount | None = None


def movement_now(legs: list[Leg]) -> datetime:
    """When a movement books: its customer account's customer's time (a test
    clock's, for its customers), else the real time (system accounts only)."""
    for leg in legs:
        if leg.account is not None:
            return customer_now(leg.account.customer_id)
    return timezone.now()


@dataclass(frozen=True)
class Outbound:
    """Count a payment against the daily outbound limit of `account_id`, in the
    statement that debits that account (see `payments.ledger`), as the
    acceptance decision's `count` says: the condition and the new count are
    that rule's own SQL (`payments.decision.DailyCount.sql`)."""

    account_id: uuid.UUID
    count: DailyCount


@dataclass(frozen=True)
class RequestRef:
    """The payment request a movement books on the account's statement: its
    acceptance, or the reversal that gives a failed payment's money back."""

    id: uuid.UUID
    reference: str


@dataclass(frozen=True)
class Counterparty:
    """The other side of a movement with the world outside the bank, as the
    account's statement names it: who paid a credit to the account (the
    debtor) or was paid by a debit from it (the creditor), its IBAN when known,
    and the end-to-end id the movement came with ('' for none)."""

    name: str
    iban: str = ""
    end_to_end_id: str = ""


class LedgerError(Exception):
    """A movement that would break the ledger's rules (a programming error)."""


class InsufficientBalance(LedgerError):
    """A movement would take a customer account below zero, or past its daily
    outbound limit when the movement counts one (`Outbound`): nothing was changed
    by it."""


def check_balanced(legs: list[Leg]) -> None:
    """The legs' rules: each names one account, moves a non-zero amount in its
    account's currency, and each currency's legs sum to zero (LedgerError otherwise)."""
    totals: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for leg in legs:
        if (leg.account is None) == (leg.system_account is None):
            raise LedgerError("A leg names exactly one account")
        if leg.amount == 0:
            raise LedgerError("A leg moves a non-zero amount")
        holder = leg.account or leg.system_account
        if holder is None or holder.currency != leg.currency:
            raise LedgerError("A leg's currency must be its account's currency")
        totals[leg.currency] += leg.amount
    if any(total != 0 for total in totals.values()):
        raise LedgerError(f"Postings do not balance: {dict(totals)}")


def movement_changes(legs: list[Leg], outbound: Outbound | None) -> dict[uuid.UUID, Decimal]:
    """Each customer account's net change, once the legs are checked against the
    ledger's rules (LedgerError otherwise)."""
    check_balanced(legs)
    changes: dict = defaultdict(lambda: ZERO)
    for leg in legs:
        if leg.account:
            changes[leg.account.id] += leg.amount
    if outbound is not None:
        if changes.get(outbound.account_id, ZERO) >= 0:
            raise LedgerError("An outbound count goes with a debit of its account")
    return changes
