"""Holds: money set aside on a customer account for payments still to come
(`payments.models.Hold`: a batch's items, from funding until each is paid or
refused).

A hold is not a booking: placing or releasing one moves no money and writes no
posting, so no statement shows it. It changes the account's `held`, and with it
the available balance every debit is checked against (`balances`), under the
account's row lock as the balance is. The caller locks the accounts first
(`lock_accounts`, primary-key order) and decides with the rules of
`payments.decision`; this module only writes what was decided, and refuses
(LedgerError, nothing written) what would break the ledger's rules.
"""

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Case, DateTimeField, Value, When

from bankapi.models import ZERO, Account
from bankapi.rows import insert_select_sql, rows_pre_save, rows_stored
from payments.decision import DailyCount, funds_admit
from payments.ledger.balances import hold_statement
from payments.ledger.legs import LedgerError
from payments.models import Hold


@dataclass(frozen=True)
class HoldOrder:
    """A hold to place: its id (chosen by the placer), account and amount."""

    id: uuid.UUID
    account_id: uuid.UUID
    amount: Decimal
    memo: str = ""


def _in_transaction(what: str) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise LedgerError(f"{what} must run inside transaction.atomic()")


def _held_store(locked: dict[uuid.UUID, Account], account_ids: Iterable[uuid.UUID]) -> None:
    touched = [locked[account_id] for account_id in sorted(set(account_ids))]
    Account.objects.bulk_update(touched, ["held"], batch_size=500)
    for account in touched:
        account.ledger_values_stored()


def holds_place(orders: list[HoldOrder], *, locked: dict[uuid.UUID, Account], now: datetime) -> None:
    """Place holds on accounts the caller locked in this transaction and decided
    can cover them. An account whose available balance would go below zero
    raises LedgerError, as does an order of zero or less."""
    _in_transaction("holds_place")
    totals: dict[uuid.UUID, Decimal] = defaultdict(lambda: ZERO)
    for order in orders:
        if order.account_id not in locked:
            raise LedgerError(f"Account {order.account_id} is not locked by the caller")
        if order.amount <= 0:
            raise LedgerError(f"A hold of {order.amount} is not a hold")
        totals[order.account_id] += order.amount
    for account_id, total in totals.items():
        if not funds_admit(locked[account_id].available, total):
            raise LedgerError(
                f"Account {account_id} cannot hold {total}: {locked[account_id].available} available"
            )
    Hold.objects.bulk_create(
        (
            Hold(
                id=order.id,
                account_id=order.account_id,
                amount=order.amount,
                placed_at=now,
                memo=order.memo[:200],
            )
            for order in orders
        ),
        batch_size=1000,
    )
    for account_id, total in totals.items():
        locked[account_id].held += total
    _held_store(locked, totals)


def holds_open(hold_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Hold]:
    """The open holds among `hold_ids`, locked until the caller's transaction ends."""
    _in_transaction("holds_open")
    rows = (
        Hold.objects.select_for_update().filter(id__in=set(hold_ids), released_at__isnull=True).order_by("id")
    )
    return {hold.id: hold for hold in rows}


def holds_release(holds: list[Hold], *, locked: dict[uuid.UUID, Account], now: datetime) -> None:
    """Release open holds (`holds_open`) on accounts the caller locked. Each is
    released at the later of `now` and its account's latest booking: the moment
    a payment booked from it in the same transaction (`ledger_post_many` at the
    same `now`) takes the balance down, so the available balance at any past
    moment is never counted twice or not at all."""
    _in_transaction("holds_release")
    if not holds:
        return
    totals: dict[uuid.UUID, Decimal] = defaultdict(lambda: ZERO)
    for hold in holds:
        if hold.account_id not in locked:
            raise LedgerError(f"Account {hold.account_id} is not locked by the caller")
        totals[hold.account_id] += hold.amount
    at = {account_id: max(now, locked[account_id].last_booked_at or now) for account_id in totals}
    Hold.objects.filter(id__in=[hold.id for hold in holds], released_at__isnull=True).update(
        released_at=Case(
            *(When(account_id=account_id, then=Value(moment)) for account_id, moment in at.items()),
            output_field=DateTimeField(),
        )
    )
    for hold in holds:
        hold.released_at = at[hold.account_id]
    for account_id, total in totals.items():
        locked[account_id].held -= total
        if locked[account_id].held < 0:
            raise LedgerError(f"Account {account_id} would hold less than nothing")
    _held_store(locked, totals)


@dataclass
class HoldSteps:
    """A hold placed and counted on the day's limit as steps of one larger
    statement (PostgreSQL; `hold_place_steps`): `update`, the account's
    conditional UPDATE (`RETURNING` its `held` and day's count), then `writes`,
    the hold's INSERT, written only if the update returned its row. Call
    `stored` with what the update returned."""

    update: tuple[str, list[Any]]
    writes: list[tuple[str, list[Any]]]
    hold: Hold

    def stored(self, account: Account, held: Any, day: Any, total: Any, connection: Any) -> None:
        """The statement placed the hold: show the account's new figures on the
        caller's Account object, and the hold as saved."""
        account.held, account.outbound_day, account.outbound_total = (
            Decimal(str(held)),
            day,
            Decimal(str(total)),
        )
        account.ledger_values_stored()
        rows_stored([self.hold], connection)


def hold_place_steps(
    order: HoldOrder, *, count: DailyCount, now: datetime, update: str, guard: str, connection: Any
) -> HoldSteps:
    """`holds_place` of one order, counted on the day's limit as the decision's
    `count` says, as steps of one statement whose UPDATE step is named `update`
    (quoted by the caller's statement, see `HoldSteps`). The same rules: an
    order of zero or less is refused (LedgerError), and the account's available
    balance must cover it, checked in the UPDATE with the count's limit, so
    that nothing is written when either fails. `guard`: a further condition of
    the UPDATE (SQL without parameters, e.g. a row of another step exists)."""
    if order.amount <= 0:
        raise LedgerError(f"A hold of {order.amount} is not a hold")
    hold = Hold(
        id=order.id, account_id=order.account_id, amount=order.amount, placed_at=now, memo=order.memo[:200]
    )
    rows_pre_save([hold])
    return HoldSteps(
        update=hold_statement(connection, order.account_id, order.amount, count, guard),
        writes=[insert_select_sql([hold], connection.ops.quote_name(update), connection)],
        hold=hold,
    )
