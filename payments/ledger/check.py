"""The ledger's integrity check (`ledger_check`, run by `manage.py check_ledger`
and after every test): currencies balance, balances are their postings' sums,
what accounts hold is their open holds' sum and never more than their balance,
running balances follow, statement lines and stored statement days are what the
ledger gives."""

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db.models import Sum

from bankapi.models import ZERO, Account
from bankapi.transactions import one_snapshot
from payments.formats import CENT
from payments.ledger.statement_lines import statement_line_facts
from payments.models import Hold, LedgerPosting, LedgerTransaction
from payments.selectors.ledger import statement_days_check
from payments.statement_formats import LAYOUTS


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
    # Account id -> (its `held`, the sum of its open holds), where they differ
    # or the holds set aside more than the balance.
    mismatched_holds: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            not self.unbalanced_currencies
            and not self.mismatched_accounts
            and not self.broken_running_balances
            and not self.misstated_lines
            and not self.stale_statement_days
            and not self.mismatched_holds
        )


STATEMENT_LINES_SHOWN = 20


def statement_lines_check() -> list[int]:
    """Customer postings whose stored statement line (kind, request id,
    reference, description, and the party outside the bank it names) differs
    from the one their movement gives: its kind and memo, the payment request
    whose acceptance, reversal or return it is, and the incoming payment it
    books. Streamed, a chunk at a time."""
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
            "transaction__returned_request__id",
            "transaction__returned_request__reference",
            "end_to_end_id",
            "counterparty_name",
            "counterparty_iban",
            "transaction__incoming_payment__end_to_end_id",
            "transaction__incoming_payment__debtor_name",
            "transaction__incoming_payment__debtor_iban",
        )
    )
    misstated = []
    for row in postings.iterator(chunk_size=5000):
        posting_id, *stored = row[:5]
        kind, memo, accepted_id, accepted_reference, reversed_id, reversed_reference = row[5:11]
        returned_id, returned_reference = row[11:13]
        party, incoming = row[13:16], row[16:]
        request_id = accepted_id or reversed_id or returned_id
        reference = (
            accepted_reference if accepted_id else reversed_reference if reversed_id else returned_reference
        )
        expected = statement_line_facts(kind, memo, request_id, reference)
        if tuple(stored) != expected or tuple(party) != _party(kind, memo, incoming):
            misstated.append(posting_id)
            if len(misstated) == STATEMENT_LINES_SHOWN:
                break
    return misstated


def _party(kind: str, memo: str, incoming: tuple) -> tuple[str, str, str]:
    """(end-to-end id, name, IBAN) of the party outside the bank a posting of
    this movement names: an incoming payment's debtor, a card clearing's
    merchant (its memo); no other movement names one."""
    if incoming[1] is not None:
        return incoming[0], incoming[1], incoming[2]
    if kind == LedgerTransaction.Kind.CARD:
        return "", memo, ""
    return "", "", ""


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
    every customer account's stored balance equals the sum of its postings and
    what it holds the sum of its open holds (never more than its balance), and
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
    open_holds = {
        row["account_id"]: row["total"].quantize(CENT)
        for row in Hold.objects.filter(released_at__isnull=True)
        .values("account_id")
        .annotate(total=Sum("amount"))
    }
    mismatched, mismatched_holds = {}, {}
    for account_id, balance, held in Account.objects.values_list("id", "balance", "held"):
        expected = posted.get(account_id, ZERO)
        if balance != expected:
            mismatched[str(account_id)] = (balance, expected)
        holding = open_holds.get(account_id, ZERO)
        if held != holding or held > balance:
            mismatched_holds[str(account_id)] = (held, holding)
    return LedgerReport(
        unbalanced_currencies=unbalanced,
        mismatched_accounts=mismatched,
        broken_running_balances=running_balances_check(),
        misstated_lines=statement_lines_check(),
        stale_statement_days=statement_days_check(LAYOUTS),
        mismatched_holds=mismatched_holds,
    )
