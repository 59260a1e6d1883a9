"""The double-entry ledger: the only code that changes an account balance.

Rules (Saleor's lock_objects habit, written down):
- Every movement is one LedgerTransaction whose postings sum to zero per currency.
- Customer accounts touched by a movement are changed in primary-key order, each
  with one conditional `UPDATE ... SET balance = balance + change WHERE balance +
  change >= 0 RETURNING balance`. The UPDATE takes the row lock and computes from
  the row as committed, so two movements on the same accounts serialise instead of
  both spending the old balance (lost update), a change that would take a balance
  below zero is refused (InsufficientBalance), and two movements on overlapping
  accounts cannot deadlock. Code that must read a balance before deciding locks
  first with `lock_accounts` (same order).
- Balances change inside the same transaction as the postings, so a crash leaves
  neither half behind.
- Every customer posting carries its account's balance after it, taken from
  that same UPDATE (RETURNING) or, in bulk, from the locked rows, and is booked
  at the later of now and the account's latest booking (`last_booked_at`,
  moved on by that UPDATE too): in booking order, an account's running balance
  always follows, whatever the clocks of the hosts that post to it.
- Every customer posting also carries what its statement line shows (the
  movement's kind, the payment request it books, reference, description),
  in the same INSERT: a statement reads the postings alone.
- A payment's debit also counts the payment against the account's daily outbound
  limit (`Outbound`) in that same UPDATE: the statement is refused when either
  the balance or the day's limit cannot take it, so the limit costs no statement
  of its own and is checked under the same row lock as the funds.
"""

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Func, Sum
from django.utils import timezone

from bankapi.models import ZERO, Account, Program
from bankapi.rows import insert_rows, insert_select_sql, rows_pre_save, rows_stored
from bankapi.transactions import one_snapshot
from payments.decision import DailyCount
from payments.models import LedgerPosting, LedgerTransaction, StatementEntry, SystemAccount
from payments.selectors.ledger import statement_days_check
from payments.statement_formats import LAYOUTS

CENT = Decimal("0.01")


@dataclass(frozen=True)
class Leg:
    """One side of a movement: a customer account or a system account."""

    amount: Decimal
    currency: str
    account: Account | None = None
    system_account: SystemAccount | None = None


@dataclass(frozen=True)
class Outbound:
    """Count a payment against the daily outbound limit of `account_id`, in the
    statement that debits that account (see the module's rules), as the
    acceptance decision's `count` says: the condition and the new count are
    that rule's own SQL (`payments.decision.DailyCount.sql`)."""

    account_id: uuid.UUID
    count: DailyCount


@dataclass(frozen=True)
class RequestRef:
    """The payment request a movement books on the account's statement: its
    acceptance, or the reversal that gives a failed payment's money back."""

    id: uuid.UUID
    reference: str


# Statement lines' references are as long as a payment's may be.
REFERENCE_MAX = 140


_KIND_LABELS = {kind.value: str(kind.label) for kind in LedgerTransaction.Kind}


def statement_description(kind: str, memo: str, has_request: bool) -> str:
    """What a posting of a movement was, in words, as its statement line says it."""
    if kind == LedgerTransaction.Kind.PAYMENT:
        return "Payment" if has_request else "Funds reserved for batch payments"
    if kind == LedgerTransaction.Kind.REVERSAL:
        return f"Payment failed: {memo}" if has_request else "Reserved funds released"
    return _KIND_LABELS.get(kind, kind)


class LedgerError(Exception):
    """A movement that would break the ledger's rules (a programming error)."""


class InsufficientBalance(LedgerError):
    """A movement would take a customer account below zero, or past its daily
    outbound limit when the movement counts one (`Outbound`): nothing was changed
    by it."""


# System accounts by (program id, sandbox, kind, currency). Their rows never change
# and are never deleted (postings protect them), so each process looks one up once
# (only immutable data is kept in a process: see docs/architecture.md).
_system_accounts: dict[tuple[str, bool, str, str], SystemAccount] = {}


def system_account_for(
    program: Program | uuid.UUID | str, sandbox: bool, kind: str, currency: str
) -> SystemAccount:
    program_id = program.pk if isinstance(program, Program) else program
    slot = (str(program_id), bool(sandbox), kind, currency)
    cached = _system_accounts.get(slot)
    if cached is not None:
        return cached
    account, _ = SystemAccount.objects.get_or_create(
        program_id=program_id, sandbox=sandbox, kind=kind, currency=currency
    )
    # Remembered once committed: a row made in a transaction that then rolls back
    # must never be handed out.
    transaction.on_commit(lambda: _system_accounts.setdefault(slot, account))
    return account


def system_accounts_forget() -> None:
    """Drop the remembered system accounts (for tests that empty the database)."""
    _system_accounts.clear()


def lock_accounts(account_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Account]:
    """Lock customer accounts in primary-key order; return them by id.

    Must run inside transaction.atomic(). Callers that check balances lock first
    and re-read from the returned rows, never from objects loaded earlier.
    """
    if not transaction.get_connection().in_atomic_block:
        raise LedgerError("lock_accounts must run inside transaction.atomic()")
    rows = Account.objects.select_for_update().filter(id__in=set(account_ids)).order_by("id")
    return {row.id: row for row in rows}


def ledger_post(
    *,
    program_id: uuid.UUID,
    sandbox: bool,
    kind: str,
    legs: list[Leg],
    key: str | None = None,
    memo: str = "",
    outbound: Outbound | None = None,
    request: RequestRef | None = None,
) -> LedgerTransaction:
    """Post a balanced movement and apply it to the customer balances.

    `request` is the payment request the movement books, named on the
    customer postings' statement lines.

    With `outbound`, the debit of its account also counts it against that
    account's daily outbound limit, in the same statement; a debit the limit
    cannot take is refused like one the balance cannot (InsufficientBalance).

    With `key`, the movement happens at most once: a second call with the same key
    raises IntegrityError inside its own savepoint, leaving the caller's
    transaction usable (see `ledger_post_once`).
    Raises InsufficientBalance, changing nothing, when a customer account would go
    below zero (or its outbound count past the limit).
    """
    changes = _movement_changes(legs, outbound)

    # A savepoint only where a caller may go on after a failure (a keyed movement
    # already made); any other failure here ends the caller's transaction.
    now = timezone.now()
    with transaction.atomic(savepoint=key is not None):
        applied, short = _apply_balance_changes(changes, now, outbound)
        if short is None:
            entry = LedgerTransaction(
                program_id=program_id, sandbox=sandbox, kind=kind, key=key, memo=memo[:200]
            )
            insert_rows([entry])
            # Each account's balance before the movement is its new one less its change.
            running = {account_id: row.balance - changes[account_id] for account_id, row in applied.items()}
            booked = {account_id: row.booked_at for account_id, row in applied.items()}
            insert_rows([_posting(entry, leg, running, booked, now, request) for leg in legs])
            # Callers keep using the Account objects they passed in: show them the new balances.
            for leg in legs:
                if leg.account:
                    _applied_show(leg.account, applied[leg.account.id])
            return entry
        if applied:
            # Other accounts were already changed: only a rollback undoes them.
            raise InsufficientBalance(f"Account {short} would go below zero")
    # Nothing was changed: the block is left first, so the caller's transaction
    # stays usable and it can tell its caller why.
    raise InsufficientBalance(f"Account {short} would go below zero")


def _applied_show(account: Account, applied: "_Applied") -> None:
    account.balance = applied.balance
    account.last_booked_at = applied.booked_at
    account.ledger_values_stored()


def _movement_changes(legs: list[Leg], outbound: Outbound | None) -> dict[uuid.UUID, Decimal]:
    """Each customer account's net change, once the legs are checked against the
    module's rules (LedgerError otherwise)."""
    _check_balanced(legs)
    changes: dict = defaultdict(lambda: ZERO)
    for leg in legs:
        if leg.account:
            changes[leg.account.id] += leg.amount
    if outbound is not None:
        if changes.get(outbound.account_id, ZERO) >= 0:
            raise LedgerError("An outbound count goes with a debit of its account")
    return changes


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


def _balance_sql(connection: Any) -> tuple[str, str]:
    """The two conditional UPDATEs of the module's rules, for this database: the
    balance change alone, and with the day's outbound count (`Outbound`). Both
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
        plain = (
            f"UPDATE {table} SET {balance} = {cents(f'{balance} + %s')}, {book} "  # noqa: S608
            f"WHERE {key} = %s AND {balance} >= %s RETURNING {balance}, {booked}"
        )
        # Every right-hand side reads the row as it was: the count restarts on a new day.
        new_total, admits = DailyCount.sql(day, total)
        counted = (
            f"UPDATE {table} SET {balance} = {cents(f'{balance} + %s')}, {book}, "  # noqa: S608
            f"{total} = {cents(new_total)}, {day} = %s "
            f"WHERE {key} = %s AND {balance} >= %s AND {admits} RETURNING {balance}, {booked}"
        )
        cached = _BALANCE_SQL[connection.vendor] = (plain, counted)
    return cached


def _balance_statement(
    connection: Any,
    account_id: uuid.UUID,
    change: Decimal,
    now: datetime,
    outbound: Outbound | None,
) -> tuple[str, list[Any]]:
    """The conditional UPDATE of one account's change (`_balance_sql`: counted
    when `outbound` is this account's) and its parameters."""
    plain, counted = _balance_sql(connection)
    money, id_field = Account._meta.get_field("balance"), Account._meta.pk
    moment = Account._meta.get_field("last_booked_at").get_db_prep_value(now, connection)
    # The balance must hold at least what the change takes away.
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


@dataclass
class PostingSteps:
    """A movement as steps of one larger statement (PostgreSQL), for a writer that
    sends its other writes with it (`ledger_post_steps`): `debit`, the account's
    conditional UPDATE (`RETURNING` its balance and booking time), then
    `writes`, the movement and its postings, each an INSERT that writes only if
    the debit returned its row. Call `stored` with what the debit returned."""

    debit: tuple[str, list[Any]]
    writes: list[tuple[str, list[Any]]]
    entry: LedgerTransaction
    postings: list[LedgerPosting]
    account: Account

    def stored(self, balance: Any, booked_at: Any, connection: Any) -> None:
        """The statement debited the account: show its new balance on the
        caller's Account object, and its rows as saved."""
        applied = _Applied(
            balance=Decimal(str(balance)).quantize(CENT), booked_at=_moment(booked_at, connection)
        )
        _applied_show(self.account, applied)
        for posting in self.postings:
            if posting.account_id is not None:
                posting.balance_after, posting.created_at = applied.balance, applied.booked_at
        rows_stored([self.entry, *self.postings], connection)


def ledger_post_steps(
    *,
    program_id: uuid.UUID,
    sandbox: bool,
    kind: str,
    legs: list[Leg],
    memo: str,
    outbound: Outbound,
    request: RequestRef,
    debit: str,
    connection: Any,
) -> PostingSteps | None:
    """`ledger_post` of a payment's movement as steps of one statement named
    `debit` for its UPDATE (see `PostingSteps`), written under the same rules:
    the same conditional UPDATE, and each
    customer posting's balance and booking time taken from what it returned.
    None when the movement has another shape than a payment's (exactly one leg
    on a customer account, the one `outbound` counts): `ledger_post` writes those."""
    changes = _movement_changes(legs, outbound)
    customer_legs = [leg for leg in legs if leg.account is not None]
    if len(customer_legs) != 1 or list(changes) != [outbound.account_id]:
        return None
    account = customer_legs[0].account
    assert account is not None
    now = timezone.now()
    name = connection.ops.quote_name
    entry = LedgerTransaction(program_id=program_id, sandbox=sandbox, kind=kind, memo=memo[:200])
    # The customer posting's balance and booking time are the debit's: written
    # from its returned row (placeholders until then).
    placeholder = {account.id: ZERO}
    postings = [_posting(entry, leg, dict(placeholder), {account.id: now}, now, request) for leg in legs]
    rows_pre_save([entry, *postings])
    from_debit = {
        "balance_after": f"{name(debit)}.{name('balance')}",
        "created_at": f"{name(debit)}.{name('last_booked_at')}",
    }
    return PostingSteps(
        debit=_balance_statement(connection, account.id, changes[account.id], now, outbound),
        writes=[
            insert_select_sql([entry], name(debit), connection),
            insert_select_sql(
                postings,
                name(debit),
                connection,
                computed=[from_debit if posting.account_id is not None else {} for posting in postings],
            ),
        ],
        entry=entry,
        postings=postings,
        account=account,
    )


@dataclass(frozen=True)
class _Applied:
    """An account's balance and booking time after a movement's change."""

    balance: Decimal
    booked_at: datetime


def _moment(value: Any, connection: Any) -> datetime:
    """A datetime column's value as the database returned it, as Django reads it."""
    column = Account._meta.get_field("last_booked_at")
    for converter in connection.ops.get_db_converters(column.get_col(Account._meta.db_table)):
        value = converter(value, column, connection)
    if not isinstance(value, datetime):
        raise LedgerError(f"A booking time was not returned: {value!r}")
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)


def _apply_balance_changes(
    changes: dict[uuid.UUID, Decimal], now: datetime, outbound: Outbound | None = None
) -> tuple[dict[uuid.UUID, _Applied], uuid.UUID | None]:
    """Apply each account's net change (see the module's rules) until one would go
    below zero (or past its outbound limit): (new balances and booking times by
    id of the accounts changed, that account's id or None)."""
    connection = transaction.get_connection()
    applied: dict[uuid.UUID, _Applied] = {}
    with connection.cursor() as cursor:
        for account_id in sorted(changes):
            cursor.execute(*_balance_statement(connection, account_id, changes[account_id], now, outbound))
            row = cursor.fetchone()
            if row is None:
                return applied, account_id
            applied[account_id] = _Applied(
                balance=Decimal(str(row[0])).quantize(CENT), booked_at=_moment(row[1], connection)
            )
    return applied, None


def ledger_post_once(**kwargs: Any) -> LedgerTransaction | None:
    """`ledger_post` for keyed movements that may be retried: None if already done."""
    if LedgerTransaction.objects.filter(key=kwargs["key"]).exists():
        return None
    try:
        return ledger_post(**kwargs)
    except IntegrityError:
        if LedgerTransaction.objects.filter(key=kwargs["key"]).exists():
            return None
        raise


def ledger_fund_account(account: Account, amount: Decimal, *, key: str, memo: str = "Funding") -> None:
    """Credit a customer account from the external system account (sandbox funding).

    The credit is booked on the account's statement in the same transaction.
    """
    external = system_account_for(
        account.program_id, account.sandbox, SystemAccount.Kind.EXTERNAL, account.currency
    )
    with transaction.atomic():
        entry = ledger_post_once(
            program_id=account.program_id,
            sandbox=account.sandbox,
            kind=LedgerTransaction.Kind.FUNDING,
            key=key,
            memo=memo,
            legs=[
                Leg(amount=-amount, currency=account.currency, system_account=external),
                Leg(amount=amount, currency=account.currency, account=account),
            ],
        )
        if entry is not None:
            StatementEntry.objects.create(
                program_id=account.program_id,
                sandbox=account.sandbox,
                account=account,
                ledger_transaction=entry,
                direction=StatementEntry.Direction.CREDIT,
                amount=amount,
                currency=account.currency,
                reference=memo[:140],
            )


@dataclass
class LedgerReport:
    unbalanced_currencies: dict[str, Decimal]
    mismatched_accounts: dict[str, tuple[Decimal, Decimal]]
    # Account id -> the first of its postings whose balance_after is not the
    # previous posting's plus its amount.
    broken_running_balances: dict[str, int] = field(default_factory=dict)
    # Customer postings whose statement line is not what their movement and its
    # payment request say (at most STATEMENT_LINES_SHOWN of them).
    misstated_lines: list[int] = field(default_factory=list)
    # Stored statement days (account id, layout, day) that differ from what the
    # ledger gives now (see `statement_days_check`).
    stale_statement_days: list[tuple[str, str, date]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not self.unbalanced_currencies
            and not self.mismatched_accounts
            and not self.broken_running_balances
            and not self.misstated_lines
            and not self.stale_statement_days
        )


STATEMENT_LINES_SHOWN = 20


def statement_lines_check() -> list[int]:
    """Customer postings whose stored statement line (kind, request id,
    reference, description) differs from the one their movement gives: its
    kind and memo, and the payment request whose acceptance or reversal it
    is. Streamed, a chunk at a time."""
    postings = (
        LedgerPosting.objects.filter(account__isnull=False)
        .order_by("id")
        .values_list(
            "id",
            "kind",
            "request_id",
            "reference",
            "description",
            "transaction__kind",
            "transaction__memo",
            "transaction__accepted_request__id",
            "transaction__accepted_request__reference",
            "transaction__reversed_request__id",
            "transaction__reversed_request__reference",
        )
    )
    misstated = []
    for row in postings.iterator(chunk_size=5000):
        posting_id, *stored = row[:5]
        kind, memo, accepted_id, accepted_reference, reversed_id, reversed_reference = row[5:]
        request_id = accepted_id or reversed_id
        expected = statement_line_facts(
            kind, memo, request_id, accepted_reference if accepted_id else reversed_reference
        )
        if tuple(stored) != expected:
            misstated.append(posting_id)
            if len(misstated) == STATEMENT_LINES_SHOWN:
                break
    return misstated


def running_balances_check() -> dict[str, int]:
    """Every customer posting's balance_after is its account's previous posting's
    (in booking order) plus its own amount, from zero. Streamed in Decimal, a
    chunk at a time: exact on every database, whatever the ledger's size."""
    broken: dict[str, int] = {}
    postings = (
        LedgerPosting.objects.filter(account__isnull=False)
        .order_by("account_id", "created_at", "id")
        .values_list("id", "account_id", "amount", "balance_after")
    )
    current, running = None, ZERO
    for posting_id, account_id, amount, balance_after in postings.iterator(chunk_size=5000):
        if account_id != current:
            current, running = account_id, ZERO
        running += amount
        if balance_after != running and str(account_id) not in broken:
            broken[str(account_id)] = posting_id
        # Go on from what was stored: each break is reported once, where it starts.
        running = balance_after if balance_after is not None else running
    return broken


def ledger_check() -> LedgerReport:
    """The ledger's invariant: every currency sums to zero across all postings,
    every customer account's stored balance equals the sum of its postings, and
    each posting's balance_after continues its account's running balance, and
    its statement line is its movement's; every stored statement day is what
    the ledger gives. Read in one snapshot: payments booked while it runs are
    in every part of it or in none, so a live ledger is not reported broken."""
    with one_snapshot():
        return _ledger_report()


def _ledger_report() -> LedgerReport:
    # Sums of amounts in cents are whole cents: rounding to the cent drops the
    # binary noise of databases that add decimals as floats (SQLite), which
    # would otherwise report a sound ledger as broken.
    unbalanced = {
        row["currency"]: row["total"].quantize(CENT)
        for row in LedgerPosting.objects.values("currency").annotate(total=Sum("amount"))
        if row["total"].quantize(CENT) != 0
    }
    posted = {
        row["account_id"]: row["total"].quantize(CENT)
        for row in LedgerPosting.objects.filter(account__isnull=False)
        .values("account_id")
        .annotate(total=Sum("amount"))
    }
    mismatched = {}
    for account_id, balance in Account.objects.values_list("id", "balance"):
        expected = posted.get(account_id, ZERO)
        if balance != expected:
            mismatched[str(account_id)] = (balance, expected)
    return LedgerReport(
        unbalanced_currencies=unbalanced,
        mismatched_accounts=mismatched,
        broken_running_balances=running_balances_check(),
        misstated_lines=statement_lines_check(),
        stale_statement_days=statement_days_check(LAYOUTS),
    )


@dataclass(frozen=True)
class Movement:
    """One balanced movement for `ledger_post_many`."""

    kind: str
    legs: list[Leg]
    key: str | None = None
    memo: str = ""
    # The payment request it books (see `ledger_post`).
    request: RequestRef | None = None


def _posting(
    entry: LedgerTransaction,
    leg: Leg,
    running: dict[uuid.UUID, Decimal],
    booked: dict[uuid.UUID, datetime],
    now: datetime,
    request: RequestRef | None,
) -> LedgerPosting:
    """The posting of one leg in the ledger transaction `entry`. A customer
    account's posting carries the account's balance after it (`running` holds
    each account's balance so far, read under its lock, and moves on by the leg)
    and is booked at the account's booking time (`booked`, see
    `Account.last_booked_at`); a system account's is booked `now`. A customer
    posting also carries its statement line (`statement_line_facts`)."""
    if leg.account is None:
        return LedgerPosting(
            transaction=entry,
            system_account=leg.system_account,
            currency=leg.currency,
            amount=leg.amount,
            created_at=now,
        )
    balance_after = running[leg.account.id] = running[leg.account.id] + leg.amount
    kind, request_id, reference, description = statement_line_facts(
        entry.kind, entry.memo, request.id if request else None, request.reference if request else None
    )
    return LedgerPosting(
        transaction=entry,
        account=leg.account,
        currency=leg.currency,
        amount=leg.amount,
        balance_after=balance_after,
        created_at=booked[leg.account.id],
        kind=kind,
        request_id=request_id,
        reference=reference,
        description=description,
    )


def statement_line_facts(
    kind: str, memo: str, request_id: uuid.UUID | None, request_reference: str | None
) -> tuple[str, uuid.UUID | None, str, str]:
    """(kind, request id, reference, description) of a customer posting of a
    movement of `kind` with `memo` (as stored: at most 200 characters), booking
    the payment request `request_id` (None when it books none): the reference
    is the request's, or the memo, cut to REFERENCE_MAX."""
    reference = (request_reference or memo)[:REFERENCE_MAX]
    return kind, request_id, reference, statement_description(kind, memo, request_id is not None)


def _check_balanced(legs: list[Leg]) -> None:
    """The legs' rules: each names one account, moves a non-zero amount in its
    account's currency, and each currency's legs sum to zero (LedgerError otherwise)."""
    totals: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for leg in legs:
        if (leg.account is None) == (leg.system_account is None):
            raise LedgerError("A leg names exactly one account")
        if leg.amount == 0:
            raise LedgerError("A leg moves a non-zero amount")
        holder = leg.account or leg.system_account
        if holder is None or holder.currency != leg.currency:
            raise LedgerError("A leg's currency must be its account's currency")
        totals[leg.currency] += leg.amount
    if any(total != 0 for total in totals.values()):
        raise LedgerError(f"Postings do not balance: {dict(totals)}")


def ledger_post_many(
    *, program_id: uuid.UUID, sandbox: bool, movements: list[Movement], locked: dict[uuid.UUID, Account]
) -> list[LedgerTransaction]:
    """Post many balanced movements in a few statements: one insert of the
    transactions, one of their postings, one balance write per account whose
    balance changed.

    For bulk work (batch payments): the caller has already locked every customer
    account the legs touch with `lock_accounts`, in this transaction, and passes
    the locked rows as `locked`; their balances are updated in place. Each
    movement is checked exactly as `ledger_post` checks one, and no account may
    end below zero.
    """
    if not transaction.get_connection().in_atomic_block:
        raise LedgerError("ledger_post_many must run inside transaction.atomic()")
    changes: dict = defaultdict(lambda: ZERO)
    for movement in movements:
        _check_balanced(movement.legs)
        for leg in movement.legs:
            if leg.account is not None:
                if leg.account.id not in locked:
                    raise LedgerError(f"Account {leg.account.id} is not locked by the caller")
                changes[leg.account.id] += leg.amount
    for account_id, change in changes.items():
        if locked[account_id].balance + change < 0:
            raise LedgerError(f"Account {account_id} would go below zero")
    entries = LedgerTransaction.objects.bulk_create(
        LedgerTransaction(program_id=program_id, sandbox=sandbox, kind=m.kind, key=m.key, memo=m.memo[:200])
        for m in movements
    )
    # Postings are inserted in this order (ids rising), so each account's
    # running balance follows it from the locked balance; all of an account's
    # are booked at one time, never before its latest booking.
    now = timezone.now()
    running = {account_id: locked[account_id].balance for account_id in changes}
    booked = {account_id: max(now, locked[account_id].last_booked_at or now) for account_id in changes}
    LedgerPosting.objects.bulk_create(
        (
            _posting(entry, leg, running, booked, now, movement.request)
            for entry, movement in zip(entries, movements, strict=True)
            for leg in movement.legs
        ),
        batch_size=2000,
    )
    touched = []
    for account_id, change in changes.items():
        locked[account_id].balance += change
        locked[account_id].last_booked_at = booked[account_id]
        locked[account_id].ledger_values_stored()
        touched.append(locked[account_id])
    Account.objects.bulk_update(touched, ["balance", "last_booked_at"], batch_size=500)
    return entries
