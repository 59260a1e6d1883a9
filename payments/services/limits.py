"""The daily outbound limit, kept on the account row per UTC day.

`Account.outbound_day` and `Account.outbound_total` hold what the account has
sent on its latest day of payments. The acceptance decision (`payments.decision`)
checks and counts a payment's debit there; the functions here read the count of
locked rows, give a failed payment back and write the counts of payments
accepted in bulk.
"""

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import F

from bankapi.models import ZERO, Account, Program
from payments.decision import Snapshot, sent_on, usage_day
from payments.ledger import InCents
from payments.models import PaymentRequest


def daily_outbound_used(account: Account, day: date) -> Decimal:
    """What `account` (a row read under its lock) has sent on `day`."""
    return sent_on(day, account.outbound_day, account.outbound_total)


def daily_outbound_remaining(program: Program, account: Account, day: date) -> Decimal:
    """How much more `account` may send on `day`: a payment debiting more than
    this is refused (LIMIT_EXCEEDED, see `payments.decision`), one debiting at
    most this fits. Negative
    when the program's limit was lowered below what was already sent."""
    return program.daily_outbound_limit - daily_outbound_used(account, day)


def daily_outbound_give_back(request: PaymentRequest) -> None:
    """A payment that failed no longer counts against the limit of its day (if
    that day is still the account's counted one: an older day no longer counts).

    Must run under the account's lock, in the transaction that marks it FAILED.
    """
    daily_outbound_return(request.account_id, usage_day(request.created_at), request.debit_amount)


def daily_outbound_return(account_id: uuid.UUID, day: date, amount: Decimal) -> None:
    """`amount` no longer counts against the limit of `day` (if that day is
    still the account's counted one: an older day no longer counts). Under the
    account's lock, in the transaction that gives it back."""
    Account.objects.filter(id=account_id, outbound_day=day).update(
        outbound_total=InCents(F("outbound_total") - amount)
    )


def daily_outbound_store(locked: Mapping[uuid.UUID, Account], counts: Mapping[uuid.UUID, Snapshot]) -> None:
    """Write the daily outbound counts the acceptance decision left accounts
    with (`{account_id: snapshot after their payments}`), for payments accepted
    in bulk. Under the accounts' locks (`locked`, the rows read under them), in
    the accepting transaction: the rows cannot change before they are written
    back, so the new counts go out in one statement however many accounts the
    chunk touches."""
    changed = []
    for account_id, after in counts.items():
        account = locked[account_id]
        account.outbound_day, account.outbound_total = after.outbound_day, after.outbound_total
        changed.append(account)
    Account.objects.bulk_update(changed, ["outbound_day", "outbound_total"], batch_size=500)
    for account in changed:
        account.ledger_values_stored()


@dataclass(frozen=True)
class AccountLimits:
    """What an account may still pay, as payment acceptance counts it: the
    per-payment maximum and the daily outbound limit of the UTC day `day`
    (debits, fees excluded), which starts again at `resets_at`."""

    currency: str
    per_payment_max: Decimal
    daily_limit: Decimal
    daily_used: Decimal
    daily_remaining: Decimal
    resets_at: datetime


def account_limits(*, program: Program, account: Account, now: datetime) -> AccountLimits:
    """The account's limits at `now`, from the counts payment acceptance keeps
    and checks (`payments.decision`): a payment debiting at most
    the smaller of `per_payment_max` and `daily_remaining` passes both limits."""
    day = usage_day(now)
    return AccountLimits(
        currency=account.currency,
        per_payment_max=program.per_payment_limit,
        daily_limit=program.daily_outbound_limit,
        daily_used=daily_outbound_used(account, day),
        daily_remaining=max(daily_outbound_remaining(program, account, day), ZERO),
        resets_at=datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC),
    )
