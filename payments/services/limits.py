"""The daily outbound limit, kept on the account row per UTC day.

`Account.outbound_day` and `Account.outbound_total` hold what the account has
sent on its latest day of payments. A payment counts its debit there in the same
conditional UPDATE that takes the balance (`payments.ledger.Outbound`); the
functions here read the count of locked rows, give a failed payment back and
count payments accepted in bulk.
"""

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import F

from bankapi.errors import ApiError, ErrorCode
from bankapi.models import ZERO, Account, Program
from payments.models import PaymentRequest


def usage_day(request: PaymentRequest) -> date:
    """The UTC day a payment counts against: the day it was accepted."""
    return request.created_at.astimezone(UTC).date()


def daily_outbound_used(account: Account, day: date) -> Decimal:
    """What `account` (a row read under its lock) has sent on `day`."""
    return account.outbound_total if account.outbound_day == day else ZERO


def daily_outbound_remaining(program: Program, account: Account, day: date) -> Decimal:
    """How much more `account` may send on `day`: a payment debiting more than
    this is refused (LIMIT_EXCEEDED), one debiting at most this fits. Negative
    when the program's limit was lowered below what was already sent."""
    return program.daily_outbound_limit - daily_outbound_used(account, day)


def daily_outbound_check(*, program: Program, account: Account, debit: Decimal, day: date) -> None:
    """Raise LIMIT_EXCEEDED if `debit` does not fit under the account's daily
    outbound limit of `day`. `account` is the row read under its lock, in the
    transaction that refuses the payment (nothing is counted here)."""
    limit = program.daily_outbound_limit
    spent = daily_outbound_used(account, day)
    if debit > daily_outbound_remaining(program, account, day):
        raise ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The payment would exceed the account's daily outbound limit of {limit:.2f} "
            f"(already sent today: {spent:.2f}).",
        )


def daily_outbound_give_back(request: PaymentRequest) -> None:
    """A payment that failed no longer counts against the limit of its day (if
    that day is still the account's counted one: an older day no longer counts).

    Must run under the account's lock, in the transaction that marks it FAILED.
    """
    Account.objects.filter(id=request.account_id, outbound_day=usage_day(request)).update(
        outbound_total=F("outbound_total") - request.debit_amount
    )


def daily_outbound_spent(accounts: Iterable[Account], day: date) -> dict[uuid.UUID, Decimal]:
    """What each account (rows read under their locks) has sent on `day`, by id."""
    return {account.id: daily_outbound_used(account, day) for account in accounts}


def daily_outbound_add(
    locked: Mapping[uuid.UUID, Account], totals: Mapping[uuid.UUID, Decimal], day: date
) -> None:
    """Count what several accounts sent on `day` (`{account_id: amount}`), for
    payments accepted in bulk. Under the accounts' locks (`locked`, the rows read
    under them), in the accepting transaction, after checking each payment
    against `daily_outbound_spent`: the rows cannot change before they are
    written back, so the new counts go out in one statement however many
    accounts the chunk touches."""
    changed = []
    for account_id, amount in totals.items():
        if not amount:
            continue
        account = locked[account_id]
        account.outbound_total = daily_outbound_used(account, day) + amount
        account.outbound_day = day
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
    and checks (`daily_outbound_check`, `Outbound`): a payment debiting at most
    the smaller of `per_payment_max` and `daily_remaining` passes both limits."""
    day = now.astimezone(UTC).date()
    return AccountLimits(
        currency=account.currency,
        per_payment_max=program.per_payment_limit,
        daily_limit=program.daily_outbound_limit,
        daily_used=daily_outbound_used(account, day),
        daily_remaining=max(daily_outbound_remaining(program, account, day), ZERO),
        resets_at=datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC),
    )
