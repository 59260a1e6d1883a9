"""The double-entry ledger: the only code that changes an account balance.

Rules (Saleor's lock_objects habit, written down):
- Every movement is one LedgerTransaction whose postings sum to zero per currency.
- Customer accounts touched by a movement are changed in primary-key order, each
  with one conditional `UPDATE ... SET balance = balance + change WHERE balance -
  held + change >= 0 RETURNING balance` (`held`: what the account's holds set
  aside). The UPDATE takes the row lock and computes from the row as committed,
  so two movements on the same accounts serialise instead of both spending the
  old balance (lost update), a change that would take the available balance
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

The modules, by concern: `legs` (a movement's shape and rules), `balances`
(the conditional UPDATE), `posting` (one movement, funding, locks, system
accounts), `steps` (a payment's movement inside one larger statement), `bulk`
(many movements on locked accounts), `holds` (money set aside for payments to
come, which lowers the available balance and is not a booking), `statement_lines` (what a posting's
statement line says), `entries` (the customer-facing statement entries: written
nowhere else) and `check` (the integrity check). What the rest of the
code uses is imported from here.
"""

from payments.ledger.balances import InCents, money_in_cents_sql
from payments.ledger.bulk import Movement, ledger_post_many
from payments.ledger.check import LedgerReport, ledger_check
from payments.ledger.entries import (
    CardCleared,
    Settled,
    statement_entries_card_cleared,
    statement_entries_settled,
    statement_entry_credit,
)
from payments.ledger.holds import (
    HoldOrder,
    HoldSteps,
    hold_place_steps,
    holds_open,
    holds_place,
    holds_release,
)
from payments.ledger.legs import Counterparty, InsufficientBalance, LedgerError, Leg, Outbound, RequestRef
from payments.ledger.posting import (
    ledger_fund_account,
    ledger_post,
    ledger_post_once,
    lock_accounts,
    system_account_for,
    system_accounts_forget,
)
from payments.ledger.statement_lines import statement_description, statement_line_facts
from payments.ledger.steps import PostingSteps, ledger_post_steps

__all__ = [
    "CardCleared",
    "Counterparty",
    "HoldOrder",
    "HoldSteps",
    "InCents",
    "InsufficientBalance",
    "Leg",
    "LedgerError",
    "LedgerReport",
    "Movement",
    "Outbound",
    "PostingSteps",
    "RequestRef",
    "Settled",
    "hold_place_steps",
    "holds_open",
    "holds_place",
    "holds_release",
    "ledger_check",
    "ledger_fund_account",
    "ledger_post",
    "ledger_post_many",
    "ledger_post_once",
    "ledger_post_steps",
    "lock_accounts",
    "money_in_cents_sql",
    "statement_description",
    "statement_entries_card_cleared",
    "statement_entries_settled",
    "statement_entry_credit",
    "statement_line_facts",
    "system_account_for",
    "system_accounts_forget",
]
