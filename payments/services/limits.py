"""The daily outbound limit, kept per account and UTC day (DailyOutboundUsage)."""

import uuid
from collections.abc import Iterable
from datetime import UTC, date
from decimal import Decimal

from django.db.models import F

from bankapi.errors import ApiError, ErrorCode
from bankapi.models import ZERO, Account, Program
from payments.models import DailyOutboundUsage, PaymentRequest


def usage_day(request: PaymentRequest) -> date:
    """The UTC day a payment counts against: the day it was accepted."""
    return request.created_at.astimezone(UTC).date()


def daily_outbound_take(*, program: Program, account: Account, debit: Decimal, day: date) -> None:
    """Count `debit` against the account's daily outbound limit of `day`, or raise
    LIMIT_EXCEEDED and count nothing.

    Must run under the account's lock, in the transaction that accepts the
    payment: two payments of one account then cannot both fit under a limit only
    one of them fits under, and a refusal later in that transaction (funds) rolls
    the count back with everything else.
    """
    limit = program.daily_outbound_limit
    # Every payment of the day but the first: one statement, adding only if it fits.
    if DailyOutboundUsage.objects.filter(account=account, day=day, total__lte=limit - debit).update(
        total=F("total") + debit
    ):
        return
    row = DailyOutboundUsage.objects.filter(account=account, day=day)
    spent = row.values_list("total", flat=True).first()
    if spent is not None or debit > limit:
        raise ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The payment would exceed the account's daily outbound limit of {limit:.2f} "
            f"(already sent today: {spent or ZERO:.2f}).",
        )
    # The day's first payment; no other can insert this row meanwhile: the
    # account is locked.
    DailyOutboundUsage.objects.create(account=account, day=day, total=debit)


def daily_outbound_give_back(request: PaymentRequest) -> None:
    """A payment that failed no longer counts against the limit of its day.

    Must run under the account's lock, in the transaction that marks it FAILED.
    """
    DailyOutboundUsage.objects.filter(account_id=request.account_id, day=usage_day(request)).update(
        total=F("total") - request.debit_amount
    )


def daily_outbound_spent(account_ids: Iterable[uuid.UUID], day: date) -> dict[uuid.UUID, Decimal]:
    """What each account has sent on `day` (accounts that sent nothing: absent)."""
    rows = DailyOutboundUsage.objects.filter(account_id__in=account_ids, day=day)
    return dict(rows.values_list("account_id", "total"))


def daily_outbound_add(totals: dict, day: date) -> None:
    """Count what several accounts sent on `day` (`{account_id: amount}`), for
    payments accepted in bulk. Under the accounts' locks, in the accepting
    transaction, after checking each payment against `daily_outbound_spent`:
    the rows read here cannot change before they are written back, so the new
    totals go out in one statement however many accounts the chunk touches."""
    rows = list(
        DailyOutboundUsage.objects.filter(account_id__in=list(totals), day=day).order_by("account_id")
    )
    for row in rows:
        row.total += totals[row.account_id]
    DailyOutboundUsage.objects.bulk_update(rows, ["total"], batch_size=500)
    existing = {row.account_id for row in rows}
    DailyOutboundUsage.objects.bulk_create(
        DailyOutboundUsage(account_id=account_id, day=day, total=amount)
        for account_id, amount in totals.items()
        if account_id not in existing and amount
    )
