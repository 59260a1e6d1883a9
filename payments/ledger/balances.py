"""The conditional UPDATE that changes a customer account's balance (see
`payments.ledger`): the balance change alone or with the day's outbound count,
refused when the balance or the limit cannot take it, returning the new balance
and booking time. Also the rule that keeps money computed in the database a
whole number of cents."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Func
from django.utils import timezone

from bankapi.models import ZERO, Account
from payments.decision import DailyCount, funds_sql
from payments.formats import CENT
from payments.ledger.legs import LedgerError, Outbound

_BALANCE_SQL: dict[str, tuple[str, str]] = {}


def money_in_cents_sql(connection: Any) -> Callable[[str], str]:
    """SQL that keeps an amount computed in the database a whole number of cents.

    PostgreSQL's numeric adds exactly. SQLite, the embedded default, adds decimal
    columns as binary floating point: 0.03 − 0.01 is 0.019999999999999997 there,
    so a later payment of exactly 0.02 would be refused (or a count would dip
    below zero). Rounding every sum to cents keeps each stored value the double
    nearest to its cents, the same double a parameter of those cents compares as.
    """
    if connection.vendor == "sqlite":
        return lambda expression: f"ROUND({expression}, 2)"
    return lambda expression: expression


class InCents(Func):
    """An ORM expression kept a whole number of cents as `money_in_cents_sql`
    keeps SQL: `F("amount") + fee` computed in the database, rounded to cents on
    SQLite and left exact on PostgreSQL. The one spelling of that rule for
    `update()` calls."""

    arity = 1

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, Any]:
        sql, params = compiler.compile(self.source_expressions[0])
        return money_in_cents_sql(connection)(sql), params


def balance_sql(connection: Any) -> tuple[str, str]:
    """The two conditional UPDATEs of the ledger's rules, for this database: the
    balance change alone, and with the day's outbound count (`Outbound`), each
    refused when the account's available balance (balance less holds) is short
    of what the change takes away. Both
    also move the account's booking time on to the later of its own and now
    (`Account.last_booked_at`) and return it with the balance. Only the model's
    table and column names go into the text; values are parameters."""
    cached = _BALANCE_SQL.get(connection.vendor)
    if cached is None:
        name = connection.ops.quote_name
        table, balance, key = name(Account._meta.db_table), name("balance"), name("id")
        day, total, booked = name("outbound_day"), name("outbound_total"), name("last_booked_at")
        book = f"{booked} = CASE WHEN {booked} > %s THEN {booked} ELSE %s END"
        cents = money_in_cents_sql(connection)
        # The decision's funds rule: what the account may spend (its balance
        # less its open holds) is at least the parameter.
        available = funds_sql(balance, name("held"), cents)
        plain = (
            f"UPDATE {table} SET {balance} = {cents(f'{balance} + %s')}, {book} "  # noqa: S608
            f"WHERE {key} = %s AND {available} RETURNING {balance}, {booked}"
        )
        # Every right-hand side reads the row as it was: the count restarts on a new day.
        new_total, admits = DailyCount.sql(day, total)
        counted = (
            f"UPDATE {table} SET {balance} = {cents(f'{balance} + %s')}, {book}, "  # noqa: S608
            f"{total} = {cents(new_total)}, {day} = %s "
            f"WHERE {key} = %s AND {available} AND {admits} RETURNING {balance}, {booked}"
        )
        cached = _BALANCE_SQL[connection.vendor] = (plain, counted)
    return cached


def balance_statement(
    connection: Any,
    account_id: uuid.UUID,
    change: Decimal,
    now: datetime,
    outbound: Outbound | None,
) -> tuple[str, list[Any]]:
    """The conditional UPDATE of one account's change (`balance_sql`: counted
    when `outbound` is this account's) and its parameters."""
    plain, counted = balance_sql(connection)
    money, id_field = Account._meta.get_field("balance"), Account._meta.pk
    moment = Account._meta.get_field("last_booked_at").get_db_prep_value(now, connection)
    # The available balance must be at least what the change takes away.
    params = [
        money.get_db_prep_value(change, connection),
        moment,
        moment,
        id_field.get_db_prep_value(account_id, connection),
        money.get_db_prep_value(max(-change, ZERO), connection),
    ]
    if outbound is not None and account_id == outbound.account_id:
        (day, add), (_, used_at_most) = outbound.count.sql_params()
        day = Account._meta.get_field("outbound_day").get_db_prep_value(day, connection)
        add, used_at_most = (money.get_db_prep_value(v, connection) for v in (add, used_at_most))
        sql, params = counted, [*params[:3], day, add, day, *params[3:], day, used_at_most]
    else:
        sql = plain
    return sql, params


def hold_statement(
    connection: Any, account_id: uuid.UUID, amount: Decimal, count: DailyCount, guard: str
) -> tuple[str, list[Any]]:
    """The conditional UPDATE that places a hold of `amount` on one account and
    counts it on the day's outbound limit (`count`), as `holds_place` and the
    day's count write it under the account's row lock: refused (no row) when
    the account's available balance is short of `amount` or the count cannot
    take it, or when `guard` (further SQL condition, no parameters) is false.
    `RETURNING` the account's `held`, `outbound_day` and `outbound_total`.
    PostgreSQL and SQLite alike; only the model's table and column names and
    `guard` go into the text, values are parameters."""
    name = connection.ops.quote_name
    table, balance, key, held = (name(x) for x in (Account._meta.db_table, "balance", "id", "held"))
    day, total = name("outbound_day"), name("outbound_total")
    cents = money_in_cents_sql(connection)
    new_total, admits = DailyCount.sql(day, total)
    sql = (
        f"UPDATE {table} SET {held} = {cents(f'{held} + %s')}, "  # noqa: S608
        f"{total} = {cents(new_total)}, {day} = %s "
        f"WHERE {key} = %s AND {cents(f'{balance} - {held}')} >= CAST(%s AS NUMERIC) AND {admits} "
        f"AND {guard} RETURNING {held}, {day}, {total}"
    )
    money = Account._meta.get_field("balance")
    (on, add), (_, used_at_most) = count.sql_params()
    on = Account._meta.get_field("outbound_day").get_db_prep_value(on, connection)
    amount_value, add, used_at_most = (
        money.get_db_prep_value(v, connection) for v in (amount, add, used_at_most)
    )
    params = [
        amount_value,
        on,
        add,
        on,
        Account._meta.pk.get_db_prep_value(account_id, connection),
        amount_value,
        on,
        used_at_most,
    ]
    return sql, params


@dataclass(frozen=True)
class Applied:
    """An account's balance and booking time after a movement's change."""

    balance: Decimal
    booked_at: datetime


def moment(value: Any, connection: Any) -> datetime:
    """A datetime column's value as the database returned it, as Django reads it."""
    column = Account._meta.get_field("last_booked_at")
    for converter in connection.ops.get_db_converters(column.get_col(Account._meta.db_table)):
        value = converter(value, column, connection)
    if not isinstance(value, datetime):
        raise LedgerError(f"A booking time was not returned: {value!r}")
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)


def apply_balance_changes(
    changes: dict[uuid.UUID, Decimal], now: datetime, outbound: Outbound | None = None
) -> tuple[dict[uuid.UUID, Applied], uuid.UUID | None]:
    """Apply each account's net change (see `payments.ledger`) until one would go
    below zero (or past its outbound limit): (new balances and booking times by
    id of the accounts changed, that account's id or None)."""
    connection = transaction.get_connection()
    applied: dict[uuid.UUID, Applied] = {}
    with connection.cursor() as cursor:
        for account_id in sorted(changes):
            cursor.execute(*balance_statement(connection, account_id, changes[account_id], now, outbound))
            row = cursor.fetchone()
            if row is None:
                return applied, account_id
            applied[account_id] = Applied(
                balance=Decimal(str(row[0])).quantize(CENT), booked_at=moment(row[1], connection)
            )
    return applied, None


def applied_show(account: Account, applied: "Applied") -> None:
    account.balance = applied.balance
    account.last_booked_at = applied.booked_at
    account.ledger_values_stored()
