"""Many balanced movements in a few statements, on accounts the caller locked
(batch payments)."""

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from bankapi.models import ZERO, Account
from payments.decision import funds_admit
from payments.ledger.legs import Counterparty, LedgerError, Leg, RequestRef, check_balanced
from payments.ledger.statement_lines import leg_posting
from payments.models import LedgerPosting, LedgerTransaction


@dataclass(frozen=True)
class Movement:
    """One balanced movement for `ledger_post_many`."""

    kind: str
    legs: list[Leg]
    key: str | None = None
    memo: str = ""
    # The payment request it books, and the party outside the bank it names (see `ledger_post`).
    request: RequestRef | None = None
    counterparty: Counterparty | None = None


def ledger_post_many(
    *,
    program_id: uuid.UUID,
    sandbox: bool,
    movements: list[Movement],
    locked: dict[uuid.UUID, Account],
    now: datetime | None = None,
) -> list[LedgerTransaction]:
    """Post many balanced movements in a few statements: one insert of the
    transactions, one of their postings, one balance write per account whose
    balance changed.

    For bulk work (batch payments): the caller has already locked every customer
    account the legs touch with `lock_accounts`, in this transaction, and passes
    the locked rows as `locked`; their balances are updated in place. Each
    movement is checked exactly as `ledger_post` checks one, and no account may
    end with less than its holds set aside (an available balance below zero).
    Postings are booked at `now` (default: the time of the call), or at the
    account's latest booking when that is later.
    """
    if not transaction.get_connection().in_atomic_block:
        raise LedgerError("ledger_post_many must run inside transaction.atomic()")
    changes: dict = defaultdict(lambda: ZERO)
    for movement in movements:
        check_balanced(movement.legs)
        for leg in movement.legs:
            if leg.account is not None:
                if leg.account.id not in locked:
                    raise LedgerError(f"Account {leg.account.id} is not locked by the caller")
                changes[leg.account.id] += leg.amount
    for account_id, change in changes.items():
        if not funds_admit(locked[account_id].available, -change):
            raise LedgerError(f"Account {account_id} would spend more than it has available")
    entries = LedgerTransaction.objects.bulk_create(
        LedgerTransaction(program_id=program_id, sandbox=sandbox, kind=m.kind, key=m.key, memo=m.memo[:200])
        for m in movements
    )
    # Postings are inserted in this order (ids rising), so each account's
    # running balance follows it from the locked balance; all of an account's
    # are booked at one time, never before its latest booking.
    now = now or timezone.now()
    running = {account_id: locked[account_id].balance for account_id in changes}
    booked = {account_id: max(now, locked[account_id].last_booked_at or now) for account_id in changes}
    LedgerPosting.objects.bulk_create(
        (
            leg_posting(entry, leg, running, booked, now, movement.request, movement.counterparty)
            for entry, movement in zip(entries, movements, strict=True)
            for leg in movement.legs
        ),
        batch_size=2000,
    )
    touched = []
    for account_id, change in changes.items():
        locked[account_id].balance += change
        locked[account_id].last_booked_at = booked[account_id]
        locked[account_id].ledger_values_stored()
        touched.append(locked[account_id])
    Account.objects.bulk_update(touched, ["balance", "last_booked_at"], batch_size=500)
    return entries
