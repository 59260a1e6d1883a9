"""Reads of an account's ledger: its balance at any moment and its statement.

Both rest on what every customer posting carries (see `LedgerPosting`): the
account's balance after it, in booking order (created_at, id), and its
statement line. The balance at a moment is the last posting's up to then, one
lookup on the index (account, created_at, id) however long the history; a
statement is one range read on that index, of the posting table alone, whose
first rows may be the postings just before the period (the opening balance).
"""

import enum
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, cast

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


class Field(enum.Enum):
    """A fact of a statement line that a line's head (`LineLayout`) shows, all
    text and none needing escaping in JSON, CSV or XML: digits, times, codes."""

    ENTRY_ID = "entry_id"  # the posting's id
    BOOKED_AT = "booked_at"  # datetime.isoformat() of the UTC moment it was booked
    BOOKED_DAY = "booked_day"  # that moment's day, YYYY-MM-DD
    AMOUNT = "amount"  # positive, two decimals
    CREDIT_DEBIT = "credit_debit"  # CRDT or DBIT
    BALANCE_AFTER = "balance_after"  # two decimals
    KIND = "kind"  # the movement's kind
    END_TO_END = "end_to_end"  # the request id without its hyphens, or NOTPROVIDED
    CURRENCY = "currency"


# EndToEndId of an entry that books no payment request.
NOT_PROVIDED = "NOTPROVIDED"


@dataclass(frozen=True)
class LineLayout:
    """The fixed first part of a statement line in one format: literal text
    and fields, in order. On PostgreSQL the database writes it while it reads
    the rows; elsewhere Python writes it from the same pieces."""

    name: str
    pieces: tuple[str | Field, ...]


# A statement line as read: (head, reference, request id, description,
# balance after), all text. `head` is the line's fixed part in the layout
# asked for; the reference and the description (free text) are left for the
# format to escape; the request id is empty when the line books none. A year's
# statement holds a hundred thousand lines: strings as the database hands them
# over, with the fixed part already written, is what makes it fast.
StatementRow = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class Statement:
    """The account's postings booked from 00:00 UTC of `first_day` to the end of
    `last_day`, oldest first (in `layout`), between the balances before and
    after them (decimal text, two places)."""

    account: Account
    first_day: date
    last_day: date
    opening_balance: str
    closing_balance: str
    layout: LineLayout
    lines: list[StatementRow]


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def _field_sql(name: Any) -> dict[Field, str]:
    """Each field as PostgreSQL writes it, from the posting `p` and the text of
    its UTC booking time `b.t` ("YYYY-MM-DD HH:MM:SS" with the trailing zeros of
    its fraction dropped, given back its "T" and six digits of fraction when it
    has one, as isoformat() writes it)."""
    amount, request = f"p.{name('amount')}", f"p.{name('request_id')}"
    return {
        Field.ENTRY_ID: f"p.{name('id')}",
        Field.BOOKED_AT: "rpad(b.t, CASE WHEN length(b.t) = 19 THEN 19 ELSE 26 END, '0') || '+00:00'",
        Field.BOOKED_DAY: "left(b.t, 10)",
        Field.AMOUNT: f"abs({amount})",
        Field.CREDIT_DEBIT: f"CASE WHEN {amount} > 0 THEN 'CRDT' ELSE 'DBIT' END",
        Field.BALANCE_AFTER: f"p.{name('balance_after')}",
        Field.KIND: f"p.{name('kind')}",
        Field.END_TO_END: f"COALESCE(replace({request}::text, '-', ''), '{NOT_PROVIDED}')",
        Field.CURRENCY: f"p.{name('currency')}",
    }


def _literal_sql(text: str) -> str:
    """`text` as an SQL string literal inside a statement with parameters."""
    return "'" + text.replace("'", "''").replace("%", "%%") + "'"


_STATEMENT_SQL: dict[tuple[str, str], str] = {}


def _statement_sql(layout: LineLayout) -> str:
    """The statement's read on PostgreSQL (see StatementRow). Rows booked
    before the period (those giving the opening balance) have a null head."""
    cached = _STATEMENT_SQL.get((connection.vendor, layout.name))
    if cached is None:
        name = connection.ops.quote_name
        fields = _field_sql(name)
        head = ", ".join(
            fields[piece] if isinstance(piece, Field) else _literal_sql(piece) for piece in layout.pieces
        )
        table = name(LedgerPosting._meta.db_table)
        account, booked, key = name("account_id"), name("created_at"), name("id")
        cached = _STATEMENT_SQL[(connection.vendor, layout.name)] = (
            f"SELECT CASE WHEN p.{booked} >= %s THEN concat({head}) END, "  # noqa: S608
            f"p.{name('reference')}, COALESCE(p.{name('request_id')}::text, ''), "
            f"p.{name('description')}, p.{name('balance_after')}::text "
            f"FROM {table} p CROSS JOIN LATERAL "
            f"(SELECT replace((p.{booked} AT TIME ZONE 'UTC')::text, ' ', 'T') AS t) b "
            f"WHERE p.{account} = %s AND p.{booked} < %s AND p.{booked} >= COALESCE("
            f"(SELECT q.{booked} FROM {table} q WHERE q.{account} = %s AND q.{booked} < %s "
            f"ORDER BY q.{booked} DESC, q.{key} DESC LIMIT 1), %s) "
            f"ORDER BY p.{booked}, p.{key}"
        )
    return cached


def _statement_rows(
    account: Account, start: datetime, end: datetime, layout: LineLayout
) -> list[tuple[str | None, str, str, str, str]]:
    """The account's postings booked from the booking time of its last posting
    before `start` (or `start`, when none) until `end`, in booking order: one
    statement, so the opening balance and the entries are read together."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_statement_sql(layout), [start, account.id, end, account.id, start, start])
            return cast(list[tuple[str | None, str, str, str, str]], cursor.fetchall())
    # Elsewhere (SQLite), the same rows through the ORM, written out here.
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
    lines: list[tuple[str | None, str, str, str, str]] = []
    for row in rows:
        posting_id, booked_at, amount, balance_after, kind, request_id, reference, description, currency = row
        # Never null on a customer account's posting.
        balance = _money(cast(Decimal, balance_after))
        head = None
        if booked_at >= start:
            moment = booked_at.astimezone(UTC).isoformat()
            fields = {
                Field.ENTRY_ID: str(posting_id),
                Field.BOOKED_AT: moment,
                Field.BOOKED_DAY: moment[:10],
                Field.AMOUNT: _money(abs(amount)),
                Field.CREDIT_DEBIT: "CRDT" if amount > 0 else "DBIT",
                Field.BALANCE_AFTER: balance,
                Field.KIND: kind,
                Field.END_TO_END: request_id.hex if request_id else NOT_PROVIDED,
                Field.CURRENCY: currency,
            }
            head = "".join(fields[piece] if isinstance(piece, Field) else piece for piece in layout.pieces)
        lines.append((head, reference, str(request_id) if request_id else "", description, balance))
    return lines


def account_statement(account: Account, first_day: date, last_day: date, layout: LineLayout) -> Statement:
    """The account's statement for the UTC days `first_day` to `last_day`, its
    lines' heads in `layout`, from one read of its ledger: the postings booked
    in the period and, ahead of them, those booked at the same instant as the
    last one before it (whose balance after is the opening balance).
    """
    start, end = day_start(first_day), day_start(last_day + timedelta(days=1))
    rows = _statement_rows(account, start, end, layout)
    before = 0
    while before < len(rows) and rows[before][0] is None:
        before += 1
    opening = rows[before - 1][4] if before else _money(ZERO)
    lines = cast(list[StatementRow], rows[before:] if before else rows)
    return Statement(
        account=account,
        first_day=first_day,
        last_day=last_day,
        opening_balance=opening,
        closing_balance=lines[-1][4] if lines else opening,
        layout=layout,
        lines=lines,
    )
