"""Payment acceptance, decided: the rules every payment meets when it is accepted.

One pure function of what the account holds (read under its row lock) and what
is asked of it. Single payments, batch items and schedule runs all come here;
the code that writes (`payments.services.acceptance` for one payment,
`payments.services.held` for many) only applies what this decides. Nothing
here reads or writes the database or the clock.

The rules, in the order they answer:
0. an instruction in a currency other than the account's, unless an FX quote
   converts it: VALIDATION_ERROR (an account pays only in its own currency);
1. the account's debit (the amount, or what an FX quote sells) above the
   program's per-payment limit: LIMIT_EXCEEDED;
2. the debit above what is left of the daily outbound limit on the UTC day of
   `now` (debits, not fees; the count starts again at 00:00 UTC): LIMIT_EXCEEDED;
3. a fee waiver the program does not allow: NOT_SUPPORTED;
4. the available balance (the balance less the account's open holds) short
   of the debit plus the fee: INSUFFICIENT_FUNDS.
An accepted payment is held for compliance review (PENDING_TM) when its debit
reaches the program's review threshold, else PENDING.

The decision is made in two steps so that the single-payment writer can apply it
in one statement: `plan` needs no account row (limits, fee, review, legs, the
day), and `Plan.decide` checks the row against the plan's two requirements, the
funds (`Plan.needs`) and the day's count (`DailyCount`). The daily count and
the funds are also written here as SQL (`DailyCount.sql`, `funds_sql`), from
the same expressions, for the ledger's conditional UPDATE: each rule exists
once.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Protocol

from bankapi.errors import ApiError, Code, ErrorCode
from bankapi.funds import available_balance, available_balance_sql
from payments.errors import PaymentErrorCode
from payments.models import PaymentRequest, SystemAccount

ZERO = Decimal("0.00")
# The holder of a leg that moves the paying account itself (other legs name the
# kind of system account they move).
ACCOUNT = "ACCOUNT"


class _ProgramLike(Protocol):
    per_payment_limit: Decimal
    daily_outbound_limit: Decimal
    review_threshold: Decimal
    fee_per_payment: Decimal
    fee_waiver_allowed: bool


class _AccountLike(Protocol):
    balance: Decimal
    held: Decimal
    currency: str
    outbound_day: date | None
    outbound_total: Decimal


@dataclass(frozen=True)
class Rules:
    """A program's acceptance settings."""

    per_payment_limit: Decimal
    daily_outbound_limit: Decimal
    review_threshold: Decimal
    fee_per_payment: Decimal
    fee_waiver_allowed: bool

    @classmethod
    def of(cls, program: _ProgramLike) -> "Rules":
        return cls(
            per_payment_limit=program.per_payment_limit,
            daily_outbound_limit=program.daily_outbound_limit,
            review_threshold=program.review_threshold,
            fee_per_payment=program.fee_per_payment,
            fee_waiver_allowed=program.fee_waiver_allowed,
        )

    def fee(self, *, fee_waived: bool) -> "Decimal | Refused":
        """The fee a payment pays, or why its waiver is refused."""
        if fee_waived and not self.fee_waiver_allowed:
            return Refused(ErrorCode.NOT_SUPPORTED, "This program does not allow waiving the payment fee.")
        return ZERO if fee_waived else self.fee_per_payment


@dataclass(frozen=True)
class Snapshot:
    """The paying account as read under its row lock: its balance, what its
    open holds set aside (`held`), and its daily outbound count
    (`outbound_total` sent on `outbound_day`, its latest day of payments)."""

    balance: Decimal
    currency: str
    outbound_day: date | None
    outbound_total: Decimal
    held: Decimal = ZERO

    @classmethod
    def of(cls, account: _AccountLike) -> "Snapshot":
        return cls(
            balance=account.balance,
            currency=account.currency,
            outbound_day=account.outbound_day,
            outbound_total=account.outbound_total,
            held=account.held,
        )

    @property
    def available(self) -> Decimal:
        """What the account may spend: its balance less what its holds set aside."""
        return available_balance(self.balance, self.held)


@dataclass(frozen=True)
class Instruction:
    """What a payment asks: the account pays `debit` (in its own currency,
    before the fee) and the payee receives `amount` in `currency`; the two
    differ only for a payment converted through an FX quote (`converted`)."""

    debit: Decimal
    amount: Decimal
    currency: str
    fee_waived: bool = False
    converted: bool = False


@dataclass(frozen=True)
class DecidedLeg:
    """One posting of the payment's movement: `holder` is ACCOUNT (the paying
    account) or the kind of the program's system account it moves."""

    holder: str
    amount: Decimal
    currency: str


@dataclass(frozen=True)
class Refused:
    """Why the payment is not accepted; nothing may be written for it."""

    code: Code
    message: str

    def error(self) -> ApiError:
        return ApiError(self.code, self.message)


def sent_on(day: date, outbound_day: date | None, outbound_total: Decimal) -> Decimal:
    """What an account whose count is `outbound_total` on `outbound_day` has
    sent on `day`: a count of another day is nothing on this one."""
    return outbound_total if outbound_day == day else ZERO


@dataclass(frozen=True)
class DailyCount:
    """The daily outbound count a payment adds to: on UTC `day` the account may
    have sent at most `used_at_most` before this payment (the limit less the
    debit), and the payment adds `add`. What an account has sent on `day` is its
    count when the count is of that day, else nothing: a new day starts at zero.
    """

    day: date
    add: Decimal
    used_at_most: Decimal

    def used(self, outbound_day: date | None, outbound_total: Decimal) -> Decimal:
        return sent_on(self.day, outbound_day, outbound_total)

    def admits(self, outbound_day: date | None, outbound_total: Decimal) -> bool:
        return self.used(outbound_day, outbound_total) <= self.used_at_most

    def admits_any(self) -> bool:
        """Whether any account could take it: a count is never below zero (the
        table's constraint), so none can when the debit alone passes the limit."""
        return self.used_at_most >= ZERO

    def total_after(self, outbound_day: date | None, outbound_total: Decimal) -> Decimal:
        return self.used(outbound_day, outbound_total) + self.add

    @staticmethod
    def sql(day_column: str, total_column: str) -> tuple[str, str]:
        """`total_after` and `admits` over an account row's columns, for a
        statement that counts the payment and checks the limit at once: (the
        new total, the condition). Their parameters are `sql_params`."""
        used = f"(CASE WHEN {day_column} = %s THEN {total_column} ELSE 0 END)"
        # An expression, unlike a column, gives a parameter no type to compare
        # as (SQLite would compare a number with text): the limit is cast.
        return f"{used} + %s", f"{used} <= CAST(%s AS NUMERIC)"

    def sql_params(self) -> tuple[tuple[date, Decimal], tuple[date, Decimal]]:
        """The parameters of `sql`'s new total and condition, in order."""
        return (self.day, self.add), (self.day, self.used_at_most)


@dataclass(frozen=True)
class Accepted:
    """An accepted payment: its movement (`legs`), its status and the account's
    figures after it (`after`)."""

    legs: tuple[DecidedLeg, ...]
    status: str
    debit: Decimal
    amount: Decimal
    currency: str
    fee: Decimal
    day: date
    after: Snapshot


@dataclass(frozen=True)
class Plan:
    """A payment the account-free rules let through (1 and 3 above, the fee,
    the review status and the movement), waiting for the locked account row.

    `deferred` is a refusal that answers only once the daily limit has been
    checked (rule 3 comes after rule 2): a plan with one is never accepted.
    """

    legs: tuple[DecidedLeg, ...]
    status: str
    debit: Decimal
    amount: Decimal
    currency: str
    fee: Decimal
    count: DailyCount
    deferred: Refused | None
    limit: Decimal

    @property
    def needs(self) -> Decimal:
        """What the account must hold: what its legs take from it (debit plus fee)."""
        return -sum((leg.amount for leg in self.legs if leg.holder == ACCOUNT), ZERO)

    @property
    def day(self) -> date:
        return self.count.day

    def decide(self, account: Snapshot) -> "Accepted | Refused":
        """Rules 2 to 4 against the account as read under its lock."""
        if not self.count.admits(account.outbound_day, account.outbound_total):
            sent = self.count.used(account.outbound_day, account.outbound_total)
            return Refused(
                PaymentErrorCode.LIMIT_EXCEEDED,
                f"The payment would exceed the account's daily outbound limit of {self.limit:.2f} "
                f"(already sent today: {sent:.2f}).",
            )
        if self.deferred is not None:
            return self.deferred
        short = funds_refusal(
            account,
            self.needs,
            f"this payment needs {self.needs:.2f} (amount {self.debit:.2f} plus fee {self.fee:.2f})",
        )
        if short is not None:
            return short
        after = replace(
            account,
            balance=account.balance - self.needs,
            outbound_day=self.day,
            outbound_total=self.count.total_after(account.outbound_day, account.outbound_total),
        )
        return Accepted(
            legs=self.legs,
            status=self.status,
            debit=self.debit,
            amount=self.amount,
            currency=self.currency,
            fee=self.fee,
            day=self.day,
            after=after,
        )


def payment_needs(debit: Decimal, fee: Decimal) -> Decimal:
    """What a payment takes from its account: its debit plus its fee (what a
    batch holds for each of its payments)."""
    return debit + fee


def funds_admit(available: Decimal, needs: Decimal) -> bool:
    """Rule 4: an account with `available` to spend can pay `needs`."""
    return available >= needs


def funds_sql(balance_column: str, held_column: str, in_cents: Callable[[str], str]) -> str:
    """`funds_admit` over an account row's columns for the ledger's UPDATE, the
    parameter cast (an expression gives it no type to compare as)."""
    return f"{in_cents(available_balance_sql(balance_column, held_column))} >= CAST(%s AS NUMERIC)"


def funds_refusal(account: Snapshot, needs: Decimal, what: str) -> "Refused | None":
    """Rule 4, the funds: an account with less than `needs` available is
    refused; `what` says what needs it ("this payment needs 10.00 (...)").
    Also the rule of a batch's funding hold, which takes a payer's items at
    once. A payment paid from its own hold is decided on the account with that
    hold released (the hold is what pays it)."""
    if funds_admit(account.available, needs):
        return None
    held = f" ({account.balance:.2f} less {account.held:.2f} held)" if account.held else ""
    return Refused(
        PaymentErrorCode.INSUFFICIENT_FUNDS,
        f"The account has {account.available:.2f} {account.currency} available{held}; {what}.",
    )


def currency_refusal(currency: str, account_currency: str) -> str | None:
    """Why an account in `account_currency` cannot pay an instruction stated in
    `currency` without an FX quote, if it cannot. The same words wherever the
    rule answers (a batch item's reason, an acceptance's refusal): the status
    report reads its reason code (AM03) from them."""
    if currency == account_currency:
        return None
    return f"amount: in {currency}, not the payer account's currency {account_currency}."


def usage_day(moment: datetime) -> date:
    """The UTC day a payment made at `moment` counts against."""
    return moment.astimezone(UTC).date()


def plan(rules: Rules, instruction: Instruction, *, account_currency: str, now: datetime) -> Plan | Refused:
    """The account-free part of the decision (see the module's rules)."""
    if not instruction.converted:
        mismatch = currency_refusal(instruction.currency, account_currency)
        if mismatch is not None:
            return Refused(ErrorCode.VALIDATION_ERROR, mismatch)
    debit = instruction.debit
    if debit > rules.per_payment_limit:
        return Refused(
            PaymentErrorCode.LIMIT_EXCEEDED,
            f"The amount is above the per-payment limit of {rules.per_payment_limit:.2f}.",
        )
    fee = rules.fee(fee_waived=instruction.fee_waived)
    deferred = fee if isinstance(fee, Refused) else None
    fee = ZERO if isinstance(fee, Refused) else fee
    legs = [
        DecidedLeg(ACCOUNT, -payment_needs(debit, fee), account_currency),
        DecidedLeg(SystemAccount.Kind.CLEARING, instruction.amount, instruction.currency),
    ]
    if instruction.converted:
        # The bank's FX position buys the account currency and sells the payee's.
        legs += [
            DecidedLeg(SystemAccount.Kind.FX, debit, account_currency),
            DecidedLeg(SystemAccount.Kind.FX, -instruction.amount, instruction.currency),
        ]
    if fee:
        legs.append(DecidedLeg(SystemAccount.Kind.FEES, fee, account_currency))
    held = debit >= rules.review_threshold
    return Plan(
        legs=tuple(legs),
        status=PaymentRequest.Status.PENDING_TM if held else PaymentRequest.Status.PENDING,
        debit=debit,
        amount=instruction.amount,
        currency=instruction.currency,
        fee=fee,
        count=DailyCount(day=usage_day(now), add=debit, used_at_most=rules.daily_outbound_limit - debit),
        deferred=deferred,
        limit=rules.daily_outbound_limit,
    )


def decide(rules: Rules, account: Snapshot, instruction: Instruction, *, now: datetime) -> Accepted | Refused:
    """Accept or refuse one payment from `account` (read under its lock) at `now`."""
    planned = plan(rules, instruction, account_currency=account.currency, now=now)
    if isinstance(planned, Refused):
        return planned
    return planned.decide(account)
