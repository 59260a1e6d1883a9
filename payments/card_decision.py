"""The card's part of the acceptance decision, beside the payment rules it
applies (`payments.decision`): a card authorization is an instruction decided
by the same plan, with the card's own rule first and no fee."""

from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal

from bankapi.errors import ErrorCode
from payments.decision import ZERO, Instruction, Plan, Refused, Rules, Snapshot, plan
from payments.errors import PaymentErrorCode

# Card authorizations: the card network asks to spend with a card. They meet
# the card's own rule first, then the payment rules that apply to them (the
# currency, both limits, the funds; cards pay no fee, and an approval is a hold
# of the amount, not a debit). A refusal is a decline with its reason, in this
# order: CARD_INACTIVE, CURRENCY_NOT_SUPPORTED, LIMIT_EXCEEDED, INSUFFICIENT_FUNDS.
CARD_INACTIVE = "CARD_INACTIVE"
CURRENCY_NOT_SUPPORTED = "CURRENCY_NOT_SUPPORTED"
_DECLINE_OF_REFUSAL = {
    ErrorCode.VALIDATION_ERROR: CURRENCY_NOT_SUPPORTED,
    PaymentErrorCode.LIMIT_EXCEEDED: PaymentErrorCode.LIMIT_EXCEEDED.value,
    PaymentErrorCode.INSUFFICIENT_FUNDS: PaymentErrorCode.INSUFFICIENT_FUNDS.value,
}
DECLINE_REASONS = (CARD_INACTIVE, CURRENCY_NOT_SUPPORTED, "LIMIT_EXCEEDED", "INSUFFICIENT_FUNDS")


@dataclass(frozen=True)
class CardSpend:
    """What the card network asks: to spend `amount` in `currency` with a card
    that is ACTIVE (`card_active`) or not."""

    amount: Decimal
    currency: str
    card_active: bool


@dataclass(frozen=True)
class Authorized:
    """An approved authorization: a hold of `amount`, counted on the UTC `day`
    of its daily limit; `after` is the account with the hold and the count."""

    amount: Decimal
    day: date
    after: Snapshot


@dataclass(frozen=True)
class Declined:
    """A declined authorization: nothing is held or counted."""

    reason: str
    message: str


def authorization_plan(
    rules: Rules, spend: CardSpend, *, account_currency: str, now: datetime
) -> Plan | Declined:
    """The account-free part of an authorization's decision: the card's rule,
    then `plan` itself on the amount with no fee (the currency, the per-payment
    limit). The plan's `count` and `needs` are what the account row must
    still meet (`Plan.decide`, or the one statement that places the hold under
    those conditions)."""
    if not spend.card_active:
        return Declined(CARD_INACTIVE, "The card is not active.")
    planned = plan(
        replace(rules, fee_per_payment=ZERO),
        Instruction(debit=spend.amount, amount=spend.amount, currency=spend.currency),
        account_currency=account_currency,
        now=now,
    )
    if isinstance(planned, Refused):
        return Declined(_DECLINE_OF_REFUSAL[planned.code], planned.message)
    return planned


def authorization_decide(
    rules: Rules, account: Snapshot, spend: CardSpend, *, now: datetime
) -> Authorized | Declined:
    """Approve or decline a card authorization on `account` (read under its
    lock) at `now`: `authorization_plan`, then the plan decided on the account
    (`Plan.decide`: one funds rule, one limits rule, the payment's)."""
    planned = authorization_plan(rules, spend, account_currency=account.currency, now=now)
    if isinstance(planned, Declined):
        return planned
    decided = planned.decide(account)
    if isinstance(decided, Refused):
        return Declined(_DECLINE_OF_REFUSAL[decided.code], decided.message)
    # A hold, not a debit: the balance stays, what is held grows by the amount.
    return Authorized(
        amount=spend.amount,
        day=decided.day,
        after=replace(decided.after, balance=account.balance, held=account.held + spend.amount),
    )
