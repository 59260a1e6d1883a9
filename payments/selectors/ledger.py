"""Reads of an account's ledger: its balance at any moment and its statement.

Both rest on what every customer posting carries (see `LedgerPosting`): the
account's balance after it, in booking order (created_at, id). The balance at
a moment is the last posting's up to then, one lookup on the index
(account, created_at, id) however long the history; a statement is one range
read on that index, whose first row may be the posting just before the period
(the opening balance).
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple
from uuid import UUID

from django.db.models import DateTimeField, F, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from bankapi.models import ZERO, Account
from payments.models import LedgerPosting, LedgerTransaction

# A statement line's reference, as long as a payment's may be.
REFERENCE_MAX = 140
# Booking order of an account's postings: the order of their running balances.
BOOKING_ORDER = ("created_at", "id")


def _postings(account: Account) -> QuerySet[LedgerPosting]:
    return LedgerPosting.objects.filter(account_id=account.id)


def _last_before(account: Account, moment: datetime) -> QuerySet[LedgerPosting]:
    """The account's last posting booked before `moment` (as a one-row queryset)."""
    return _postings(account).filter(created_at__lt=moment).order_by("-created_at", "-id")[:1]


def balance_as_of(account: Account, moment: datetime) -> Decimal:
    """The account's ledger balance after every posting booked at or before
    `moment`: zero before its first posting."""
    last = (
        _postings(account)
        .filter(created_at__lte=moment)
        .order_by("-created_at", "-id")
        .values_list("balance_after", flat=True)
        .first()
    )
    return ZERO if last is None else last


def day_start(day: date) -> datetime:
    """00:00 UTC of `day`."""
    return datetime.combine(day, time.min, tzinfo=UTC)


class StatementLine(NamedTuple):
    """One posting of the account as its statement shows it. `amount` is
    positive; `credit` says which way it moved the balance. (A tuple: a year's
    statement makes one per posting.)"""

    entry_id: str
    # The movement's kind (LedgerTransaction.Kind).
    kind: str
    booked_at: datetime
    amount: Decimal
    credit: bool
    balance_after: Decimal
    reference: str
    request_id: UUID | None
    description: str


@dataclass(frozen=True)
class Statement:
    """The account's postings booked from 00:00 UTC of `first_day` to the end of
    `last_day`, oldest first, between the balances before and after them."""

    account: Account
    first_day: date
    last_day: date
    opening_balance: Decimal
    closing_balance: Decimal
    lines: list[StatementLine]


_KIND_LABELS = {kind.value: str(kind.label) for kind in LedgerTransaction.Kind}


def _description(kind: str, memo: str, has_request: bool) -> str:
    """What a posting was, in words, from its movement."""
    if kind == LedgerTransaction.Kind.PAYMENT:
        return "Payment" if has_request else "Funds reserved for batch payments"
    if kind == LedgerTransaction.Kind.REVERSAL:
        return f"Payment failed: {memo}" if has_request else "Reserved funds released"
    return _KIND_LABELS.get(kind, kind)


_COLUMNS = (
    "id",
    "created_at",
    "amount",
    "balance_after",
    "transaction__kind",
    "transaction__memo",
    "transaction__accepted_request__id",
    "transaction__accepted_request__reference",
    "transaction__reversed_request__id",
    "transaction__reversed_request__reference",
)


def account_statement(account: Account, first_day: date, last_day: date) -> Statement:
    """The account's statement for the UTC days `first_day` to `last_day`, from
    one read of its ledger: the postings booked in the period and, ahead of
    them, those booked at the same instant as the last one before it (whose
    balance after is the opening balance).

    A payment's acceptance and the reversal of a payment that failed name the
    payment request (its reference and id); other movements show their memo.
    """
    start, end = day_start(first_day), day_start(last_day + timedelta(days=1))
    since = Coalesce(
        Subquery(_last_before(account, start).values("created_at")),
        Value(start, output_field=DateTimeField()),
    )
    rows = (
        _postings(account)
        .filter(created_at__lt=end)
        .alias(since=since)
        .filter(created_at__gte=F("since"))
        .order_by(*BOOKING_ORDER)
        .values_list(*_COLUMNS)
    )
    opening = ZERO
    lines = []
    for (
        posting_id,
        booked_at,
        amount,
        balance_after,
        kind,
        memo,
        accepted_id,
        accepted_reference,
        reversed_id,
        reversed_reference,
    ) in rows:
        if booked_at < start:
            opening = balance_after
            continue
        request_id = accepted_id or reversed_id
        lines.append(
            StatementLine(
                entry_id=str(posting_id),
                kind=kind,
                booked_at=booked_at,
                amount=abs(amount),
                credit=amount > 0,
                balance_after=balance_after,
                reference=(accepted_reference or reversed_reference or memo)[:REFERENCE_MAX],
                request_id=request_id,
                description=_description(kind, memo, request_id is not None),
            )
        )
    return Statement(
        account=account,
        first_day=first_day,
        last_day=last_day,
        opening_balance=opening,
        closing_balance=lines[-1].balance_after if lines else opening,
        lines=lines,
    )
