"""Payments paid from funds reserved beforehand (batch payments).

A batch first reserves, per payer account, the total of its payments in one
ledger movement (account -> clearing). Later, in chunks, each reserved payment
is accepted under the rules every payment follows (limits, then funds including
the fee): the chunk's reserved funds are released back to their accounts and
each payment is then posted account -> clearing as its own acceptance, so a
payment that fails after acceptance reverses to its account like any other. A
payment refused at acceptance (a limit) simply keeps its released funds on its
account.

Both steps lock the accounts they touch once, in primary-key order
(`lock_accounts`), and write with a handful of bulk statements, never one round
trip per payment.
"""

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date
from decimal import Decimal

from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode
from bankapi.models import ZERO, Account, Program
from payments.events import payment_requests_accepted
from payments.ledger import Leg, Movement, RequestRef, ledger_post_many, lock_accounts, system_account_for
from payments.models import LedgerTransaction, PaymentRequest, SystemAccount
from payments.services.acceptance import payment_fee
from payments.services.limits import daily_outbound_add, daily_outbound_spent, usage_day


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
    reference: str
    payee: dict


def fee_per_payment(program: Program) -> Decimal:
    return payment_fee(program, fee_waived=False)


class _SystemAccounts:
    """System accounts looked up once per call, not once per payment."""

    def __init__(self) -> None:
        self._rows: dict[tuple[uuid.UUID, bool, str, str], SystemAccount] = {}

    def get(self, account: Account, kind: str) -> SystemAccount:
        key = (account.program_id, account.sandbox, kind, account.currency)
        if key not in self._rows:
            self._rows[key] = system_account_for(*key)
        return self._rows[key]


def funds_reserve(*, program: Program, sandbox: bool, reservations: list[Reservation], memo: str) -> dict:
    """Reserve each account's amount in one movement per account, if it can cover it.

    Answers `{account_id: None}` for a reservation made (now or by an earlier run
    with the same key) and `{account_id: reason}` for an account that cannot
    cover its amount. Must run inside the caller's transaction.
    """
    done = set(
        LedgerTransaction.objects.filter(key__in=[r.key for r in reservations]).values_list("key", flat=True)
    )
    # Locked until the caller's transaction ends: a payment from the same account
    # racing with the reservation serialises here, so neither spends the other's funds.
    locked = lock_accounts(r.account_id for r in reservations)
    outcome: dict = {}
    movements = []
    system = _SystemAccounts()
    for reservation in reservations:
        account = locked[reservation.account_id]
        if reservation.key in done:
            outcome[account.id] = None
        elif account.balance < reservation.amount:
            outcome[account.id] = (
                f"INSUFFICIENT_FUNDS: the account holds {account.balance:.2f} {account.currency}; "
                f"its payments in this batch need {reservation.amount:.2f}."
            )
        else:
            outcome[account.id] = None
            clearing = system.get(account, SystemAccount.Kind.CLEARING)
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


def _spent_today(accounts: Iterable[Account], day: date) -> dict[uuid.UUID, Decimal]:
    return defaultdict(lambda: ZERO, daily_outbound_spent(accounts, day))


def _limit_refusal(program: Program, amount: Decimal, spent: Decimal) -> ApiError | None:
    if amount > program.per_payment_limit:
        return ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The amount is above the per-payment limit of {program.per_payment_limit:.2f}.",
        )
    if spent + amount > program.daily_outbound_limit:
        return ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The payment would exceed the account's daily outbound limit of "
            f"{program.daily_outbound_limit:.2f} (already sent today: {spent:.2f}).",
        )
    return None


def payments_accept_reserved(
    *, program: Program, sandbox: bool, payments: list[ReservedPayment], memo: str
) -> list[PaymentRequest | ApiError]:
    """Accept payments whose funds were reserved by `funds_reserve`, in order.

    Answers, per payment, its PaymentRequest (PENDING, or PENDING_TM at the
    review threshold) or the ApiError that stopped it before acceptance
    (LIMIT_EXCEEDED, INSUFFICIENT_FUNDS). Must run inside the caller's
    transaction, which also records what became of each payment: the caller
    must hold its own rows locked so that no payment is accepted twice.
    """
    if not payments:
        return []
    locked = lock_accounts(p.account_id for p in payments)
    fee = fee_per_payment(program)
    system = _SystemAccounts()
    released: dict = defaultdict(lambda: ZERO)
    for payment in payments:
        released[payment.account_id] += payment.reserved
    release_legs = []
    for account_id, amount in sorted(released.items()):
        account = locked[account_id]
        clearing = system.get(account, SystemAccount.Kind.CLEARING)
        release_legs += [
            Leg(amount=-amount, currency=account.currency, system_account=clearing),
            Leg(amount=amount, currency=account.currency, account=account),
        ]
    movements = [Movement(kind=LedgerTransaction.Kind.REVERSAL, legs=release_legs, memo=memo)]
    # What each account holds once its reserved funds are back, spent as we go.
    available = {account_id: locked[account_id].balance + amount for account_id, amount in released.items()}
    now = timezone.now()
    day = now.astimezone(UTC).date()
    spent = _spent_today((locked[account_id] for account_id in released), day)
    sent: dict = defaultdict(lambda: ZERO)
    outcomes: list = []
    accepted = []
    for payment in payments:
        account = locked[payment.account_id]
        refusal = _limit_refusal(program, payment.amount, spent[account.id])
        if refusal is None and available[account.id] < payment.amount + fee:
            refusal = ApiError(
                ErrorCode.INSUFFICIENT_FUNDS,
                f"The account holds {available[account.id]:.2f} {account.currency}; this payment needs "
                f"{payment.amount + fee:.2f} (amount {payment.amount:.2f} plus fee {fee:.2f}).",
            )
        if refusal is not None:
            outcomes.append(refusal)
            continue
        available[account.id] -= payment.amount + fee
        spent[account.id] += payment.amount
        sent[account.id] += payment.amount
        legs = [
            Leg(amount=-(payment.amount + fee), currency=account.currency, account=account),
            Leg(
                amount=payment.amount,
                currency=account.currency,
                system_account=system.get(account, SystemAccount.Kind.CLEARING),
            ),
        ]
        if fee:
            fees = system.get(account, SystemAccount.Kind.FEES)
            legs.append(Leg(amount=fee, currency=account.currency, system_account=fees))
        movements.append(
            Movement(
                kind=LedgerTransaction.Kind.PAYMENT,
                legs=legs,
                memo=payment.reference,
                request=RequestRef(id=payment.request_id, reference=payment.reference),
            )
        )
        outcomes.append(payment)
        accepted.append(payment)
    entries = ledger_post_many(program_id=program.id, sandbox=sandbox, movements=movements, locked=locked)
    requests = PaymentRequest.objects.bulk_create(
        (
            PaymentRequest(
                id=payment.request_id,
                program_id=program.id,
                sandbox=sandbox,
                customer_id=locked[payment.account_id].customer_id,
                account_id=payment.account_id,
                status=(
                    PaymentRequest.Status.PENDING_TM
                    if payment.amount >= program.review_threshold
                    else PaymentRequest.Status.PENDING
                ),
                amount=payment.amount,
                currency=locked[payment.account_id].currency,
                debit_amount=payment.amount,
                fee=fee,
                reference=payment.reference,
                payee=payment.payee,
                acceptance=entry,
            )
            for payment, entry in zip(accepted, entries[1:], strict=True)
        ),
        batch_size=1000,
    )
    daily_outbound_add(locked, sent, day)
    crossed_midnight = [request.id for request in requests if usage_day(request) != day]
    if crossed_midnight:
        # Keep them on the day their limit was checked against (see payment_accept).
        PaymentRequest.objects.filter(id__in=crossed_midnight).update(created_at=now)
        for request in requests:
            if request.id in crossed_midnight:
                request.created_at = now
    payment_requests_accepted(requests)
    by_payment = dict(zip(map(id, accepted), requests, strict=True))
    return [
        by_payment[id(outcome)] if isinstance(outcome, ReservedPayment) else outcome for outcome in outcomes
    ]
