"""Reads of an account's ledger: its balance at any moment and its statement.

Both rest on what every customer posting carries (see `LedgerPosting`): the
account's balance after it, in booking order (created_at, id), and its
statement line. The balance at a moment is the last posting's up to then, one
lookup on the index (account, created_at, id) however long the history; a
statement is one range read on that index, of the posting table alone, whose
first rows may be the postings just before the period (the opening balance).
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import NamedTuple, cast

from django.db import connection
from django.db.models import DateTimeField, F, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from bankapi.models import ZERO, Account
from payments.models import LedgerPosting

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


class StatementPosting(NamedTuple):
    """A posting of the account as a statement line shows it (see `LineLayout`)."""

    id: int
    booked_at: datetime
    amount: Decimal
    # Never null on a customer account's posting (typed as the column is).
    balance_after: Decimal | None
    kind: str
    request_id: uuid.UUID | None
    reference: str
    description: str
    currency: str


@dataclass(frozen=True)
class LineLayout:
    """How a statement line is written in one format: `sql`, an expression of
    PostgreSQL over the posting `p` and the text `b.t` of its UTC booking time
    ("YYYY-MM-DDTHH:MM:SS.ffffff", six digits of fraction always),
    or `python`, from a StatementPosting (on other databases). Both must write
    the same text (the statement's tests hold them to it on each database)."""

    name: str
    sql: Callable[[Callable[[str], str]], str]
    python: Callable[[StatementPosting], str]


@dataclass(frozen=True)
class Statement:
    """The account's postings booked from 00:00 UTC of `first_day` to the end of
    `last_day`, oldest first, each written as a line of `layout`, between the
    balances before and after them (decimal text, two places)."""

    account: Account
    first_day: date
    last_day: date
    opening_balance: str
    closing_balance: str
    layout: LineLayout
    lines: list[str]


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


_STATEMENT_SQL: dict[tuple[str, str], str] = {}


def _statement_sql(layout: LineLayout) -> str:
    """The statement's read on PostgreSQL: (line, balance after) per posting,
    in booking order. The rows booked before the period (ahead of it, for the
    opening balance) have no line; only they and the rows of the period's last
    booking instant carry their balance after, the others a null: a year is a
    hundred thousand rows, and each value sent costs."""
    cached = _STATEMENT_SQL.get((connection.vendor, layout.name))
    if cached is None:
        name = connection.ops.quote_name
        table = name(LedgerPosting._meta.db_table)
        account, booked, key = name("account_id"), name("created_at"), name("id")

        def last_before(moment: str) -> str:
            """The booking time of the account's last posting before `moment`."""
            return (
                f"(SELECT q.{booked} FROM {table} q WHERE q.{account} = %(account)s "  # noqa: S608
                f"AND q.{booked} < {moment} ORDER BY q.{booked} DESC, q.{key} DESC LIMIT 1)"
            )

        cached = _STATEMENT_SQL[(connection.vendor, layout.name)] = (
            f"SELECT CASE WHEN p.{booked} >= %(start)s THEN {layout.sql(name)} END, "  # noqa: S608
            f"CASE WHEN p.{booked} < %(start)s OR p.{booked} >= "
            f"{last_before('%(end)s')} "
            f"THEN p.{name('balance_after')}::text END "
            f"FROM {table} p CROSS JOIN LATERAL "
            f"(SELECT to_char(p.{booked} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') AS t) b "
            f"WHERE p.{account} = %(account)s AND p.{booked} < %(end)s AND p.{booked} >= COALESCE("
            f"{last_before('%(start)s')}, %(start)s) "
            f"ORDER BY p.{booked}, p.{key}"
        )
    return cached


def _statement_rows(
    account: Account, start: datetime, end: datetime, layout: LineLayout
) -> list[tuple[str | None, str | None]]:
    """The account's postings booked from the booking time of its last posting
    before `start` (or `start`, when none) until `end`, in booking order: one
    statement, so the opening balance and the entries are read together."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_statement_sql(layout), {"account": account.id, "start": start, "end": end})
            return cast(list[tuple[str | None, str | None]], cursor.fetchall())
    return statement_rows_written_here(account, start, end, layout)


def statement_rows_written_here(
    account: Account, start: datetime, end: datetime, layout: LineLayout
) -> list[tuple[str | None, str | None]]:
    """`_statement_rows` on any database (SQLite's way): the rows through the
    ORM, their lines written by Python, each with its balance after."""
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
        .values_list(
            "id",
            "created_at",
            "amount",
            "balance_after",
            "kind",
            "request_id",
            "reference",
            "description",
            "currency",
        )
    )
    lines: list[tuple[str | None, str | None]] = []
    for row in rows:
        posting = StatementPosting(*row)
        line = layout.python(posting) if posting.booked_at >= start else None
        # Never null on a customer account's posting.
        lines.append((line, _money(cast(Decimal, posting.balance_after))))
    return lines


def account_statement(account: Account, first_day: date, last_day: date, layout: LineLayout) -> Statement:
    """The account's statement for the UTC days `first_day` to `last_day`, its
    lines written in `layout`, from one read of its ledger: the postings booked
    in the period and, ahead of them, those booked at the same instant as the
    last one before it (whose balance after is the opening balance).
    """
    start, end = day_start(first_day), day_start(last_day + timedelta(days=1))
    rows = _statement_rows(account, start, end, layout)
    before = 0
    while before < len(rows) and rows[before][0] is None:
        before += 1
    opening = rows[before - 1][1] if before else None
    closing = rows[-1][1] if len(rows) > before else None
    return Statement(
        account=account,
        first_day=first_day,
        last_day=last_day,
        opening_balance=opening or _money(ZERO),
        closing_balance=closing or opening or _money(ZERO),
        layout=layout,
        lines=cast(list[str], [row[0] for row in (rows[before:] if before else rows)]),
    )
