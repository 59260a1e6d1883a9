"""Payments paid from funds held beforehand (batch payments).

A batch first holds, per payer account, the amount and fee of each of its
payments at once (`funds_hold`), when the account's available balance covers
their total. A hold is not a booking (`payments.ledger.holds`): it moves no
money and no statement shows it; it lowers the available balance, so no other
payment can spend what the batch was promised. Later, in chunks, each held
payment is accepted under the rules every payment follows (`payments.decision`),
decided on its account with its own hold released: the hold is what pays it.
Accepted, its hold is released at its booking and it is posted account ->
clearing as its own acceptance (one debit on the statement), so a payment that
fails after acceptance reverses to its account like any other; refused (a
limit), its hold is released and nothing is booked.

Both steps lock the accounts they touch once, in primary-key order
(`lock_accounts`), and write with a handful of bulk statements, never one round
trip per payment.
"""

import uuid
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from bankapi.clock import account_customer_id, customer_now
from bankapi.models import ZERO, Program
from payments.decision import Instruction, Refused, Rules, Snapshot, decide, funds_refusal
from payments.ledger import HoldOrder, holds_open, holds_place, lock_accounts
from payments.models import PaymentRequest
from payments.payees import Payee
from payments.services.acceptance import payment_fee
from payments.writer import SystemAccounts, WorkOrder, payment_work, works_write_bulk


@dataclass(frozen=True)
class HeldPayment:
    """One payment from funds its hold (`hold_id`, placed by `funds_hold`) set
    aside on its account.

    `request_id` is the id its payment request takes: the caller's own id for
    the payment (a batch item's), so the caller can link the two in bulk.
    """

    request_id: uuid.UUID
    account_id: uuid.UUID
    hold_id: uuid.UUID
    amount: Decimal
    currency: str
    reference: str
    payee: Payee


def fee_per_payment(program: Program) -> Decimal:
    return payment_fee(program, fee_waived=False)


def batch_now(account_ids: list[uuid.UUID]) -> datetime:
    """The time of a batch's holds and payments: its payers' customer's. One time
    serves every payer: a batch of several customers is a custodian's, and a
    custodian's customers never live on a test clock (only customers made on
    demand do, and they have no custodian)."""
    return customer_now(account_customer_id(account_ids[0]) if account_ids else None)


def funds_hold(orders: list[HoldOrder]) -> dict[uuid.UUID, Refused | None]:
    """Place every hold of an account, or none of them: all when its available
    balance covers their total (the decision's funds rule).

    Answers `{account_id: None}` for an account whose holds were placed and
    `{account_id: Refused}` for one that cannot cover its total. Must run
    inside the caller's transaction, which records what the holds are for.
    """
    # Locked until the caller's transaction ends: a payment from the same account
    # racing with the holds serialises here, so neither spends the other's funds.
    locked = lock_accounts(order.account_id for order in orders)
    totals: dict[uuid.UUID, Decimal] = defaultdict(lambda: ZERO)
    for order in orders:
        totals[order.account_id] += order.amount
    outcome: dict[uuid.UUID, Refused | None] = {
        account_id: funds_refusal(
            Snapshot.of(locked[account_id]), total, f"its payments in this batch need {total:.2f}"
        )
        for account_id, total in sorted(totals.items())
    }
    holds_place(
        [order for order in orders if outcome[order.account_id] is None],
        locked=locked,
        now=batch_now(list(locked)),
    )
    return outcome


def payments_accept_held(
    *, program: Program, sandbox: bool, payments: list[HeldPayment]
) -> list[PaymentRequest | Refused]:
    """Accept payments whose funds their holds set aside (`funds_hold`), in
    order, as `payments.decision` decides each one on its account with its own
    hold released, as the earlier ones left it. Every payment's hold is
    released: at the payment's booking when accepted, unused when refused.

    Answers, per payment, its PaymentRequest (PENDING, or PENDING_TM at the
    review threshold) or the decision's refusal that stopped it before
    acceptance (LIMIT_EXCEEDED, INSUFFICIENT_FUNDS, a currency not the
    account's). Must run inside the caller's transaction, which also records
    what became of each payment: the caller must hold its own rows locked so
    that no payment is accepted twice.
    """
    if not payments:
        return []
    locked = lock_accounts(p.account_id for p in payments)
    holds = holds_open(p.hold_id for p in payments)
    rules = Rules.of(program)
    system = SystemAccounts()
    # Each account as the decision sees it, as each payment before leaves it.
    snapshots = {account_id: Snapshot.of(account) for account_id, account in locked.items()}
    now = batch_now(list(locked))
    outcomes: list[PaymentRequest | Refused] = []
    works, releasing = [], []
    for payment in payments:
        account = locked[payment.account_id]
        # Its own hold released: what it set aside is what pays it (when a hold
        # was never placed or is already released, the available balance must).
        hold = holds.get(payment.hold_id)
        if hold is not None and hold.account_id == account.id:
            releasing.append(hold)
            snapshots[account.id] = replace(
                snapshots[account.id], held=snapshots[account.id].held - hold.amount
            )
        decided = decide(
            rules,
            snapshots[account.id],
            Instruction(debit=payment.amount, amount=payment.amount, currency=payment.currency),
            now=now,
        )
        if isinstance(decided, Refused):
            outcomes.append(decided)
            continue
        snapshots[account.id] = decided.after
        work = payment_work(
            account=account,
            decided=decided,
            order=WorkOrder(reference=payment.reference, payee=payment.payee),
            now=now,
            system=system,
            request_id=payment.request_id,
        )
        outcomes.append(work.request)
        works.append(work)
    works_write_bulk(
        works,
        program_id=program.id,
        sandbox=sandbox,
        locked=locked,
        releasing=releasing,
        after=snapshots,
        now=now,
    )
    return outcomes
