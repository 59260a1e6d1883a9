"""Card spending on the ledger: a card authorization's hold, its clearing paid
from that hold, and a hold given back unused.

The card app keeps the authorizations; what they do to an account is done
here, by the ledger's own writers, as a batch item's hold is placed and paid
(`payments.services.held`):
- an authorization is decided by the acceptance decision
  (`payments.card_decision.authorization_decide`: the card's rule beside the
  payment rules) on the account read under its row lock; approved, its hold is
  placed (`holds_place`) and its amount counted on the day's limit, in the same
  transaction;
- a clearing releases the hold at its booking and books one debit of the
  cleared amount, account -> the program's external account (`ledger_post_many`:
  a chunk of clearings in a few statements), with its statement entry; what was
  authorized and not cleared goes back to the authorization's day's count;
- a reversal or an expiry releases the hold unused and gives its whole amount
  back to that day.
Accounts are locked once, in primary-key order (`lock_accounts`).
"""

import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from bankapi.models import ZERO, Account, Program
from payments.card_decision import Authorized, CardSpend, Declined, authorization_decide
from payments.decision import Rules, Snapshot
from payments.ledger import (
    CardCleared,
    Counterparty,
    HoldOrder,
    LedgerError,
    Leg,
    Movement,
    holds_open,
    holds_place,
    holds_release,
    ledger_post_many,
    lock_accounts,
    statement_entries_card_cleared,
    system_account_for,
)
from payments.models import LedgerTransaction, SystemAccount
from payments.services.limits import daily_outbound_return, daily_outbound_store


def card_hold_place(
    *, program: Program, account_id: uuid.UUID, spend: CardSpend, hold_id: uuid.UUID, memo: str, now: datetime
) -> Authorized | Declined:
    """Decide an authorization on the account under its row lock and, approved,
    place its hold and count it on the day's limit. Must run inside the
    caller's transaction, which records the authorization."""
    # Locked until the caller's transaction ends: a payment or another
    # authorization from the account serialises here, so none spends what
    # this one holds.
    locked = lock_accounts([account_id])
    decided = authorization_decide(Rules.of(program), Snapshot.of(locked[account_id]), spend, now=now)
    if isinstance(decided, Authorized):
        holds_place(
            [HoldOrder(id=hold_id, account_id=account_id, amount=decided.amount, memo=memo)],
            locked=locked,
            now=now,
        )
        daily_outbound_store(locked, {account_id: decided.after})
    return decided


@dataclass(frozen=True)
class HoldGivenBack:
    """An authorization's hold released: `cleared` of it paid (zero for a
    reversal or an expiry), the rest given back to the count of `day`."""

    hold_id: uuid.UUID
    account_id: uuid.UUID
    authorized: Decimal
    day: date
    cleared: Decimal = ZERO
    # A clearing's debit: the merchant (reference and creditor) and the authorization it names.
    merchant: str = ""
    authorization_id: uuid.UUID | None = None


def card_holds_settle(items: list[HoldGivenBack], *, now: datetime) -> dict[uuid.UUID, LedgerTransaction]:
    """Release the items' holds (open, on their accounts); book each cleared
    amount as one debit paid from its hold, with its statement entry; give
    what was not cleared back to its day's count. Answers the clearing
    movements by hold id. Must run inside the caller's transaction, which
    holds the authorizations locked (so none is settled twice)."""
    if not items:
        return {}
    locked = lock_accounts(item.account_id for item in items)
    holds = holds_open(item.hold_id for item in items)
    if set(holds) != {item.hold_id for item in items}:
        raise LedgerError("A card authorization's hold is not open")
    holds_release(list(holds.values()), locked=locked, now=now)
    # Each program's (and environment's) clearings are one bulk movement set.
    paying: dict[tuple[uuid.UUID, bool], list[HoldGivenBack]] = defaultdict(list)
    for item in items:
        if item.cleared > 0:
            account = locked[item.account_id]
            paying[(account.program_id, account.sandbox)].append(item)
    movements: dict[uuid.UUID, LedgerTransaction] = {}
    for (program_id, sandbox), group in paying.items():
        entries = ledger_post_many(
            program_id=program_id,
            sandbox=sandbox,
            movements=[_clearing(locked[item.account_id], item) for item in group],
            locked=locked,
            now=now,
        )
        statement_entries_card_cleared(
            CardCleared(
                account=locked[item.account_id],
                entry=entry,
                amount=item.cleared,
                reference=item.merchant,
                authorization_id=item.authorization_id,  # type: ignore[arg-type]
            )
            for item, entry in zip(group, entries, strict=True)
        )
        movements.update({item.hold_id: entry for item, entry in zip(group, entries, strict=True)})
    given_back: dict[tuple[uuid.UUID, date], Decimal] = defaultdict(lambda: ZERO)
    for item in items:
        if item.authorized > item.cleared:
            given_back[(item.account_id, item.day)] += item.authorized - item.cleared
    for (account_id, day), amount in sorted(given_back.items()):
        daily_outbound_return(account_id, day, amount)
    return movements


def _clearing(account: Account, item: HoldGivenBack) -> Movement:
    external = system_account_for(
        account.program_id, account.sandbox, SystemAccount.Kind.EXTERNAL, account.currency
    )
    return Movement(
        kind=LedgerTransaction.Kind.CARD,
        legs=[
            Leg(amount=-item.cleared, currency=account.currency, account=account),
            Leg(amount=item.cleared, currency=account.currency, system_account=external),
        ],
        memo=item.merchant,
        counterparty=Counterparty(name=item.merchant),
    )
