"""Reads of an account's ledger: its balance at any moment and its statement.

Both rest on what every customer posting carries (see `LedgerPosting`): the
account's balance after it, in booking order (created_at, id), and its
statement line. The balance at a moment is the last posting's up to then, one
lookup on the index (account, created_at, id) however long the history. A
statement's entries are its days' lines: the days already closed and stored
(`StatementDay`) are read as stored, the others written from range reads of
the posting table on that index, and the closed ones among them stored.
"""

import hashlib
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from itertools import groupby
from operator import itemgetter
from typing import Any, NamedTuple, cast

import psycopg
from django.apps import apps
from django.db import connection
from django.db.models import QuerySet, Subquery

from bankapi.models import ZERO, Account
from bankapi.transactions import one_snapshot
from payments.models import LedgerPosting, LedgerTransaction, StatementDay

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
    # The movement's party outside the bank and its end-to-end id ('' when it names none).
    end_to_end_id: str = ""
    counterparty_name: str = ""
    counterparty_iban: str = ""
    # What the posting's payment was given with, when a batch item paid it (the
    # file's ids, or '' where the file had none or the batch was JSON): the
    # end-to-end id as its status report names it, MsgId, PmtInfId, InstrId.
    item_end_to_end_id: str = ""
    message_id: str = ""
    payment_information_id: str = ""
    instruction_id: str = ""
    # A return's ISO reason code ('' on any other posting).
    return_reason: str = ""


@dataclass(frozen=True)
class LineLayout:
    """How a statement line is written in one format: `sql`, an expression of
    PostgreSQL over the posting `p`, the text `b.t` of its UTC booking time
    ("YYYY-MM-DDTHH:MM:SS.ffffff", six digits of fraction always), the batch
    item `i` that paid its request (nulls when none) and, for a return, its
    ledger transaction `t` (nulls otherwise),
    or `python`, from a StatementPosting (on other databases). Both must write
    the same text (the statement's tests hold them to it on each database).

    A day's lines are joined with `separator` into one piece, and `escapes`
    (pairs of text and its replacement) are applied to the piece as the
    format's body needs them: pieces are stored as the body carries them."""

    name: str
    sql: Callable[[Callable[[str], str]], str]
    python: Callable[[StatementPosting], str]
    separator: str
    escapes: tuple[tuple[str, str], ...] = ()
    # The name under which its days are stored (see `stored_as`).
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", self.stored_as())

    def stored_as(self) -> str:
        """The name its pieces are stored under (`StatementDay.layout`): the
        format's name and a digest of how a piece is written (the SQL of a
        line, the separator and the escapes). A layout changed in any of them
        never reads the pieces of the old one."""
        written = repr((self.sql(lambda column: f'"{column}"'), self.separator, self.escapes))
        return f"{self.name}-{hashlib.sha256(written.encode()).hexdigest()[:16]}"

    def piece(self, lines: Iterable[str]) -> bytes:
        """A day's lines as one piece of the body, in UTF-8."""
        text = self.separator.join(lines)
        for plain, escaped in self.escapes:
            text = text.replace(plain, escaped)
        return text.encode()


@dataclass(frozen=True)
class Statement:
    """The account's postings booked from 00:00 UTC of `first_day` to the end of
    `last_day`, oldest first, written as `layout` lines joined by its separator
    in `pieces` (one per day that has entries, escaped as the body is, UTF-8;
    `entries` lines in all), between the balances before and after them
    (decimal text, two places)."""

    account: Account
    first_day: date
    last_day: date
    opening_balance: str
    closing_balance: str
    layout: LineLayout
    pieces: list[bytes]
    entries: int


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


_DAYS_SQL: dict[tuple[str, str], str] = {}


def _days_sql(layout: LineLayout) -> str:
    """A range of days on PostgreSQL: (UTC day as YYYY-MM-DD, line) per posting
    of the account booked from `start` until `end`, in booking order."""
    cached = _DAYS_SQL.get((connection.vendor, layout.key))
    if cached is None:
        name = connection.ops.quote_name
        table = name(LedgerPosting._meta.db_table)
        account, booked, key = name("account_id"), name("created_at"), name("id")
        items = name(_batch_item_model()._meta.db_table)
        transactions = name(LedgerTransaction._meta.db_table)
        cached = _DAYS_SQL[(connection.vendor, layout.key)] = (
            f"SELECT left(b.t, 10), {layout.sql(name)} "  # noqa: S608
            f"FROM {table} p CROSS JOIN LATERAL "
            f"(SELECT to_char(p.{booked} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') AS t) b "
            f"LEFT JOIN {items} i ON p.{name('request_id')} IS NOT NULL "
            f"AND i.{name('payment_id')} = p.{name('request_id')} "
            f"LEFT JOIN {transactions} t ON p.{name('kind')} = '{LedgerTransaction.Kind.RETURN}' "
            f"AND t.{key} = p.{name('transaction_id')} "
            f"WHERE p.{account} = %(account)s AND p.{booked} >= %(start)s AND p.{booked} < %(end)s "
            f"ORDER BY p.{booked}, p.{key}"
        )
    return cached


def _day_lines(
    account: Account, start: datetime, end: datetime, layout: LineLayout
) -> Iterator[tuple[date, list[str]]]:
    """The lines of the account's postings booked from `start` until `end`,
    day by day (UTC), in booking order; days without postings are left out."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_days_sql(layout), {"account": account.id, "start": start, "end": end})
            rows = cast(list[tuple[str, str]], cursor.fetchall())
        for day, group in groupby(rows, key=itemgetter(0)):
            yield date.fromisoformat(day), [line for _, line in group]
        return
    yield from day_lines_written_here(account, start, end, layout)


def day_lines_written_here(
    account: Account, start: datetime, end: datetime, layout: LineLayout
) -> Iterator[tuple[date, list[str]]]:
    """`_day_lines` on any database (SQLite's way): the rows through the ORM,
    their lines written by Python."""
    rows = (
        _postings(account)
        .filter(created_at__gte=start, created_at__lt=end)
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
            "end_to_end_id",
            "counterparty_name",
            "counterparty_iban",
        )
    )
    postings = _with_item_and_reason(list(rows))
    for day, group in groupby(postings, key=lambda posting: posting.booked_at.astimezone(UTC).date()):
        yield day, [layout.python(posting) for posting in group]


def _batch_item_model() -> Any:
    # The batch app pays through this one, not the other way round: its model
    # is looked up by name.
    return apps.get_model("batches", "BatchItem")


# Ids per lookup: a year of postings must not pass SQLite's limit on the
# parameters of one statement.
_LOOKUP_CHUNK = 5000


def _with_item_and_reason(rows: list[tuple[Any, ...]]) -> Iterator[StatementPosting]:
    """The postings of `rows` with what their batch items and returns add."""
    request_ids = sorted({row[5] for row in rows if row[5]})
    items = {
        payment_id: (end_to_end_id or item_id.hex, message_id, information_id, instruction_id)
        for start in range(0, len(request_ids), _LOOKUP_CHUNK)
        for item_id, payment_id, end_to_end_id, message_id, information_id, instruction_id in (
            _batch_item_model()
            .objects.filter(payment_id__in=request_ids[start : start + _LOOKUP_CHUNK])
            .values_list(
                "id",
                "payment_id",
                "end_to_end_id",
                "message_id",
                "payment_information_id",
                "instruction_id",
            )
        )
    }
    returns = {row[0] for row in rows if row[4] == LedgerTransaction.Kind.RETURN}
    reasons = dict(LedgerPosting.objects.filter(id__in=returns).values_list("id", "transaction__memo"))
    for row in rows:
        end_to_end_id, message_id, information_id, instruction_id = items.get(row[5], ("", "", "", ""))
        yield StatementPosting(*row)._replace(
            item_end_to_end_id=end_to_end_id,
            message_id=message_id,
            payment_information_id=information_id,
            instruction_id=instruction_id,
            return_reason=reasons.get(row[0], ""),
        )


def _balances(account: Account, start: datetime, end: datetime) -> tuple[Decimal, Decimal]:
    """The account's balances before `start` and before `end`: one index
    lookup each, in one query."""

    def before(moment: datetime) -> Subquery:
        return Subquery(_last_before(account, moment).values("balance_after"))

    row = (
        Account.objects.filter(id=account.id)
        .annotate(opening=before(start), closing=before(end))
        .values_list("opening", "closing")
        .get()
    )
    return row[0] or ZERO, row[1] or ZERO


def last_closed_day(account: Account) -> date | None:
    """The last UTC day of the account that can no longer change, as this read
    of the account sees it: the day before its latest booking time. Booking
    times never go backwards and are set under the account's row lock with
    each posting (`Account.last_booked_at`): once the account has booked at or
    after 00:00 UTC of the next day, every posting of the day was committed
    before that booking was, and no later posting can be booked into the day.
    None before the account's first posting."""
    booked = account.last_booked_at
    return None if booked is None else booked.astimezone(UTC).date() - timedelta(days=1)


def _missing_ranges(
    first: date, last: date, stored: dict[date, tuple[bytes, int]]
) -> list[tuple[date, date]]:
    """The runs of consecutive days from `first` to `last` with no stored piece."""
    ranges: list[tuple[date, date]] = []
    day = first
    while day <= last:
        if day in stored:
            day += timedelta(days=1)
            continue
        begins = day
        while day + timedelta(days=1) <= last and day + timedelta(days=1) not in stored:
            day += timedelta(days=1)
        ranges.append((begins, day))
        day += timedelta(days=1)
    return ranges


def _stored_days(
    account: Account, layout: LineLayout, first: date, last: date
) -> dict[date, tuple[bytes, int]]:
    """The pieces stored for the account's days `first` to `last`: (lines, entries) by day.
    On PostgreSQL the rows come in the binary protocol: the pieces as they
    are stored, copied once."""
    rows = StatementDay.objects.filter(
        account_id=account.id, layout=layout.key, day__gte=first, day__lte=last
    ).values_list("day", "lines", "entries")
    if connection.vendor != "postgresql":
        return {day: (bytes(lines), entries) for day, lines, entries in rows}
    sql, params = rows.query.sql_with_params()
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return {day: (lines, entries) for day, lines, entries in cursor}


def _store(days: list[StatementDay]) -> None:
    """Insert the days' pieces, leaving any day already stored as it is (ON
    CONFLICT DO NOTHING): readers racing to store a day store it once, and the
    text is the same whoever wins. On PostgreSQL the values are bound by the
    server, one INSERT per day sent in a pipeline: a year is tens of
    megabytes, which client-side quoting (Django's way) took seconds to write
    into the statement's text."""
    if connection.vendor != "postgresql":
        StatementDay.objects.bulk_create(days, ignore_conflicts=True, batch_size=100)
        return
    name = connection.ops.quote_name
    columns = ("account_id", "layout", "day", "lines", "entries")
    sql = (
        f"INSERT INTO {name(StatementDay._meta.db_table)} ({', '.join(map(name, columns))}) "  # noqa: S608
        f"VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.executemany(sql, [(d.account_id, d.layout, d.day, d.lines, d.entries) for d in days])


def account_statement(account: Account, first_day: date, last_day: date, layout: LineLayout) -> Statement:
    """The account's statement for the UTC days `first_day` to `last_day`, its
    lines written in `layout`.

    The pieces of its closed days already stored (see `last_closed_day`) are
    read as stored; the other days are written from the ledger, one range read
    per run of consecutive days, and those of them that are closed are stored
    (empty days too), for the next statement that covers them. The opening and
    closing balances are the balances after the last postings before the
    period and before its end (one index lookup each).
    """
    start, end = day_start(first_day), day_start(last_day + timedelta(days=1))
    closed = last_closed_day(account)
    closed_through = min(last_day, closed) if closed is not None else None
    written: dict[date, tuple[bytes, int]] = {}
    fresh: list[StatementDay] = []
    # A posting committed while the reads run is in all of them (its line, the
    # closing balance) or in none, so the statement reconciles.
    with one_snapshot():
        opening, closing = _balances(account, start, end)
        stored: dict[date, tuple[bytes, int]] = {}
        if closed_through is not None and closed_through >= first_day:
            stored = _stored_days(account, layout, first_day, closed_through)
        for first, last in _missing_ranges(first_day, last_day, stored):
            lines_of = _day_lines(account, day_start(first), day_start(last + timedelta(days=1)), layout)
            for day, lines in lines_of:
                written[day] = (layout.piece(lines), len(lines))
            if closed_through is None or first > closed_through:
                continue
            day = first
            while day <= min(last, closed_through):
                piece, count = written.get(day, (b"", 0))
                fresh.append(
                    StatementDay(
                        account_id=account.id, layout=layout.key, day=day, lines=piece, entries=count
                    )
                )
                day += timedelta(days=1)
    # Stored after the reads' transaction: under REPEATABLE READ, an INSERT that
    # meets a day another reader stored since the snapshot would fail to serialize.
    if fresh:
        _store(fresh)
    pieces: list[bytes] = []
    entries = 0
    for _day, (piece, count) in sorted({**stored, **written}.items()):
        if count:
            pieces.append(piece)
            entries += count
    return Statement(
        account=account,
        first_day=first_day,
        last_day=last_day,
        opening_balance=_money(opening),
        closing_balance=_money(closing),
        layout=layout,
        pieces=pieces,
        entries=entries,
    )


STALE_DAYS_SHOWN = 20


def statement_days_check(layouts: Iterable[LineLayout]) -> list[tuple[str, str, date]]:
    """Stored days (`StatementDay`) whose lines or entry count differ from what
    the ledger gives now: (account id, layout, day), at most STALE_DAYS_SHOWN.
    None should ever be found: a day is stored once closed, and a closed day's
    postings never change. Each account's stored days in each of `layouts` are
    compared with one range read of its postings (pieces of other layouts are
    never read, and not checked)."""
    by_key = {layout.key: layout for layout in layouts}
    stored = StatementDay.objects.filter(layout__in=by_key)
    stale: list[tuple[str, str, date]] = []
    for account_id, key in (
        stored.values_list("account_id", "layout").distinct().order_by("account_id", "layout")
    ):
        layout, account = by_key[key], Account(id=account_id)
        days = list(
            stored.filter(account_id=account_id, layout=key)
            .order_by("day")
            .values_list("day", "lines", "entries")
        )
        start, end = day_start(days[0][0]), day_start(days[-1][0] + timedelta(days=1))
        written = {
            day: (layout.piece(lines), len(lines)) for day, lines in _day_lines(account, start, end, layout)
        }
        for day, lines, entries in days:
            if written.get(day, (b"", 0)) != (bytes(lines), entries):
                stale.append((str(account_id), key, day))
                if len(stale) == STALE_DAYS_SHOWN:
                    return stale
    return stale
