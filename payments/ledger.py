"""The double-entry ledger: the only code that changes an account balance.

Rules (Saleor's lock_objects habit, written down):
- Every movement is one LedgerTransaction whose postings sum to zero per currency.
- Customer accounts touched by a movement are locked with SELECT ... FOR UPDATE in
  primary-key order before their balances are read, so two movements on the same
  accounts serialise instead of both reading the old balance (lost update), and two
  movements on overlapping accounts cannot deadlock.
- Balances are written from the locked rows inside the same transaction as the
  postings, so a crash leaves neither half behind.
"""

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Sum

from bankapi.models import ZERO, Account, Program
from payments.models import LedgerPosting, LedgerTransaction, StatementEntry, SystemAccount


@dataclass(frozen=True)
class Leg:
    """One side of a movement: a customer account or a system account."""

    amount: Decimal
    currency: str
    account: Account | None = None
    system_account: SystemAccount | None = None


class LedgerError(Exception):
    """A movement that would break the ledger's rules (a programming error)."""


# System accounts by (program id, sandbox, kind, currency). Their rows never change
# and are never deleted (postings protect them), so each process looks one up once
# (DESIGN 16: only immutable data is kept in a process).
_system_accounts: dict[tuple, SystemAccount] = {}


def system_account_for(program: Program | str, sandbox: bool, kind: str, currency: str) -> SystemAccount:
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


def lock_accounts(account_ids) -> dict:
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
    program_id,
    sandbox: bool,
    kind: str,
    legs: list[Leg],
    key: str | None = None,
    memo: str = "",
    locked: dict | None = None,
) -> LedgerTransaction:
    """Post a balanced movement and apply it to the customer balances.

    With `key`, the movement happens at most once: a second call with the same key
    raises IntegrityError inside its own savepoint, leaving the caller's
    transaction usable (see `ledger_post_once`).

    `locked`: the rows of `lock_accounts` when the caller already holds the locks of
    every customer account of the movement (in this transaction): they are not
    locked a second time.
    """
    totals: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for leg in legs:
        if (leg.account is None) == (leg.system_account is None):
            raise LedgerError("A leg names exactly one account")
        if leg.amount == 0:
            raise LedgerError("A leg moves a non-zero amount")
        holder = leg.account or leg.system_account
        if holder.currency != leg.currency:
            raise LedgerError("A leg's currency must be its account's currency")
        totals[leg.currency] += leg.amount
    if any(total != 0 for total in totals.values()):
        raise LedgerError(f"Postings do not balance: {dict(totals)}")

    # A savepoint only where a caller may go on after a failure (a keyed movement
    # already made); any other failure here is a bug and ends the transaction.
    with transaction.atomic(savepoint=key is not None):
        touched = {leg.account.id for leg in legs if leg.account}
        if locked is None or not touched <= locked.keys():
            locked = lock_accounts(touched)
        entry = LedgerTransaction.objects.create(
            program_id=program_id, sandbox=sandbox, kind=kind, key=key, memo=memo[:200]
        )
        LedgerPosting.objects.bulk_create(
            LedgerPosting(
                transaction=entry,
                account=leg.account,
                system_account=leg.system_account,
                currency=leg.currency,
                amount=leg.amount,
            )
            for leg in legs
        )
        changes: dict = defaultdict(lambda: ZERO)
        for leg in legs:
            if leg.account:
                changes[leg.account.id] += leg.amount
        for account_id, change in changes.items():
            account = locked[account_id]
            if account.balance + change < 0:
                raise LedgerError(f"Account {account_id} would go below zero")
            account.balance += change
            account.save(update_fields=["balance"])
        # Callers keep using the Account objects they passed in: show them the new balances.
        for leg in legs:
            if leg.account:
                leg.account.balance = locked[leg.account.id].balance
        return entry


def ledger_post_once(**kwargs) -> LedgerTransaction | None:
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

    @property
    def ok(self) -> bool:
        return not self.unbalanced_currencies and not self.mismatched_accounts


def ledger_check() -> LedgerReport:
    """The ledger's invariant: every currency sums to zero across all postings, and
    every customer account's stored balance equals the sum of its postings."""
    unbalanced = {
        row["currency"]: row["total"]
        for row in LedgerPosting.objects.values("currency").annotate(total=Sum("amount"))
        if row["total"] != 0
    }
    posted = {
        row["account_id"]: row["total"]
        for row in LedgerPosting.objects.filter(account__isnull=False)
        .values("account_id")
        .annotate(total=Sum("amount"))
    }
    mismatched = {}
    for account_id, balance in Account.objects.values_list("id", "balance"):
        expected = posted.get(account_id, ZERO)
        if balance != expected:
            mismatched[str(account_id)] = (balance, expected)
    return LedgerReport(unbalanced_currencies=unbalanced, mismatched_accounts=mismatched)
