"""Payments paid from funds reserved beforehand (batch payments).

A batch first reserves, per payer account, the total of its payments in one
ledger movement (account -> clearing). Later, in chunks, each reserved payment
is accepted under the rules every payment follows (`payments.decision`): the
chunk's reserved funds are released back to their accounts and each payment is
then posted account -> clearing as its own acceptance, so a payment that fails
after acceptance reverses to its account like any other. A payment refused at
acceptance (a limit) simply keeps its released funds on its account.

Both steps lock the accounts they touch once, in primary-key order
(`lock_accounts`), and write with a handful of bulk statements, never one round
trip per payment.
"""

import uuid
from collections import defaultdict
from dataclasses import dataclass, replace
from decimal import Decimal

from django.utils import timezone

from bankapi.models import ZERO, Program
from payments.decision import Instruction, Refused, Rules, Snapshot, decide, funds_refusal
from payments.ledger import Leg, Movement, ledger_post_many, lock_accounts
from payments.models import LedgerTransaction, PaymentRequest, SystemAccount
from payments.payees import Payee
from payments.services.acceptance import payment_fee
from payments.writer import SystemAccounts, WorkOrder, payment_work, works_write_bulk


@dataclass(frozen=True)
class Reservation:
    """What to reserve on one account, and the key that makes it happen once."""

    account_id: uuid.UUID
    amount: Decimal
    key: str


@dataclass(frozen=True)
class ReservedPayment:
    """One payment from funds reserved on its account (`reserved` of them).

    `request_id` is the id its payment request takes: the caller's own id for
    the payment (a batch item's), so the caller can link the two in bulk.
    """

    request_id: uuid.UUID
    account_id: uuid.UUID
    reserved: Decimal
    amount: Decimal
    currency: str
    reference: str
    payee: Payee


def fee_per_payment(program: Program) -> Decimal:
    return payment_fee(program, fee_waived=False)


def funds_reserve(
    *, program: Program, sandbox: bool, reservations: list[Reservation], memo: str
) -> dict[uuid.UUID, Refused | None]:
    """Reserve each account's amount in one movement per account, if it can cover it.

    Answers `{account_id: None}` for a reservation made (now or by an earlier run
    with the same key) and `{account_id: Refused}` for an account that cannot
    cover its amount (the decision's funds rule). Must run inside the caller's
    transaction.
    """
    done = set(
        LedgerTransaction.objects.filter(key__in=[r.key for r in reservations]).values_list("key", flat=True)
    )
    # Locked until the caller's transaction ends: a payment from the same account
    # racing with the reservation serialises here, so neither spends the other's funds.
    locked = lock_accounts(r.account_id for r in reservations)
    outcome: dict[uuid.UUID, Refused | None] = {}
    movements = []
    system = SystemAccounts()
    for reservation in reservations:
        account = locked[reservation.account_id]
        if reservation.key in done:
            outcome[account.id] = None
        elif (
            short := funds_refusal(
                Snapshot.of(account),
                reservation.amount,
                f"its payments in this batch need {reservation.amount:.2f}",
            )
        ) is not None:
            outcome[account.id] = short
        else:
            outcome[account.id] = None
            clearing = system.get(account, SystemAccount.Kind.CLEARING, account.currency)
            movements.append(
                Movement(
                    kind=LedgerTransaction.Kind.PAYMENT,
                    key=reservation.key,
                    memo=memo,
                    legs=[
                        Leg(amount=-reservation.amount, currency=account.currency, account=account),
                        Leg(amount=reservation.amount, currency=account.currency, system_account=clearing),
                    ],
                )
            )
    ledger_post_many(program_id=program.id, sandbox=sandbox, movements=movements, locked=locked)
    return outcome


def payments_accept_reserved(
    *, program: Program, sandbox: bool, payments: list[ReservedPayment], memo: str
) -> list[PaymentRequest | Refused]:
    """Accept payments whose funds were reserved by `funds_reserve`, in order,
    as `payments.decision` decides each one against its account as the earlier
    ones left it.

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
    rules = Rules.of(program)
    system = SystemAccounts()
    released: dict = defaultdict(lambda: ZERO)
    for payment in payments:
        released[payment.account_id] += payment.reserved
    release_legs = []
    for account_id, amount in sorted(released.items()):
        account = locked[account_id]
        clearing = system.get(account, SystemAccount.Kind.CLEARING, account.currency)
        release_legs += [
            Leg(amount=-amount, currency=account.currency, system_account=clearing),
            Leg(amount=amount, currency=account.currency, account=account),
        ]
    # Each account as the decision sees it: its reserved funds back, then as
    # each payment accepted leaves it.
    snapshots = {
        account_id: replace(Snapshot.of(locked[account_id]), balance=locked[account_id].balance + amount)
        for account_id, amount in released.items()
    }
    now = timezone.now()
    outcomes: list[PaymentRequest | Refused] = []
    works = []
    for payment in payments:
        account = locked[payment.account_id]
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
        before=[Movement(kind=LedgerTransaction.Kind.REVERSAL, legs=release_legs, memo=memo)],
        after=snapshots,
        now=now,
    )
    return outcomes
