"""Posting one movement (`ledger_post`), keyed movements made at most once, and
sandbox funding; the system accounts and the customer accounts' locks."""

import uuid
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction

from bankapi.models import Account, Program
from bankapi.rows import insert_rows
from payments.ledger.balances import applied_show, apply_balance_changes
from payments.ledger.entries import statement_entry_credit
from payments.ledger.legs import (
    Counterparty,
    InsufficientBalance,
    LedgerError,
    Leg,
    Outbound,
    RequestRef,
    movement_changes,
    movement_now,
)
from payments.ledger.statement_lines import leg_posting
from payments.models import LedgerTransaction, SystemAccount

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
    counterparty: Counterparty | None = None,
) -> LedgerTransaction:
    """Post a balanced movement and apply it to the customer balances.

    `request` is the payment request the movement books, named on the
    customer postings' statement lines; `counterparty` the party outside the
    bank a movement with the world outside names there.

    With `outbound`, the debit of its account also counts it against that
    account's daily outbound limit, in the same statement; a debit the limit
    cannot take is refused like one the balance cannot (InsufficientBalance).

    With `key`, the movement happens at most once: a second call with the same key
    raises IntegrityError inside its own savepoint, leaving the caller's
    transaction usable (see `ledger_post_once`).
    Raises InsufficientBalance, changing nothing, when a customer account would go
    below zero (or its outbound count past the limit).
    """
    changes = movement_changes(legs, outbound)

    # A savepoint only where a caller may go on after a failure (a keyed movement
    # already made); any other failure here ends the caller's transaction.
    now = movement_now(legs)
    with transaction.atomic(savepoint=key is not None):
        applied, short = apply_balance_changes(changes, now, outbound)
        if short is None:
            entry = LedgerTransaction(
                program_id=program_id, sandbox=sandbox, kind=kind, key=key, memo=memo[:200]
            )
            insert_rows([entry])
            # Each account's balance before the movement is its new one less its change.
            running = {account_id: row.balance - changes[account_id] for account_id, row in applied.items()}
            booked = {account_id: row.booked_at for account_id, row in applied.items()}
            insert_rows(
                [leg_posting(entry, leg, running, booked, now, request, counterparty) for leg in legs]
            )
            # Callers keep using the Account objects they passed in: show them the new balances.
            for leg in legs:
                if leg.account:
                    applied_show(leg.account, applied[leg.account.id])
            return entry
        if applied:
            # Other accounts were already changed: only a rollback undoes them.
            raise InsufficientBalance(f"Account {short} would go below zero")
    # Nothing was changed: the block is left first, so the caller's transaction
    # stays usable and it can tell its caller why.
    raise InsufficientBalance(f"Account {short} would go below zero")


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
            statement_entry_credit(account, entry, amount, memo)
