"""Payment acceptance: the one place where a payment is checked and debited.

Called by the payment route, the schedule runner and (later) admin and batches.
"""

import uuid
from dataclasses import dataclass
from datetime import UTC, date
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import ZERO, Account, Program
from bankapi.rows import insert_rows
from events.models import EventType
from payments.events import payment_request_event
from payments.fx import fx_quote_amounts, fx_quote_consume
from payments.ledger import (
    InsufficientBalance,
    Leg,
    Outbound,
    RequestRef,
    ledger_post,
    lock_accounts,
    system_account_for,
)
from payments.models import (
    Beneficiary,
    FxQuote,
    LedgerTransaction,
    PaymentRequest,
    ScheduledPayment,
    SystemAccount,
)
from payments.services.limits import daily_outbound_check, usage_day


@dataclass(frozen=True)
class PaymentInstruction:
    """What to pay, already validated against the account (see payments.serializers).

    `payee` is the payee as paid (`{name, account, accountType?}`): the beneficiary's
    details when `beneficiary` is set, the inline payee otherwise, None for a
    crypto-funded payment (the quote's provider delivers to the customer's wallet).

    With `quote_id` the payment is converted through that FX quote: the account
    pays the quote's sell amount and the payee receives its buy amount, in its buy
    currency. `amount` and `currency`, when given, must then match what the quote
    buys; an international transfer gives neither.
    """

    amount: Decimal | None
    currency: str
    reference: str
    purpose: str = ""
    charge_bearer: str = ""
    beneficiary: Beneficiary | None = None
    payee: dict | None = None
    virtual_iban: str = ""
    fee_waived: bool = False
    quote_id: uuid.UUID | None = None


def _check_per_payment_limit(program: Program, debit: Decimal) -> None:
    if debit > program.per_payment_limit:
        raise ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The amount is above the per-payment limit of {program.per_payment_limit:.2f}.",
        )


def _daily_limit_first(program: Program, account: Account, debit: Decimal, day: date) -> Account:
    """For a payment refused before its daily limit was known to fit: lock the
    account and check the limit, which answers first (LIMIT_EXCEEDED) as it does
    for every payment. The locked row, for the refusal's message."""
    locked = lock_accounts([account.id])[account.id]
    daily_outbound_check(program=program, account=locked, debit=debit, day=day)
    return locked


def _program_of(account: Account) -> Program:
    """The account's program: the row loaded with the caller when there is one."""
    if Account.program.is_cached(account):
        return account.program
    return Program.objects.get(id=account.program_id)


@dataclass(frozen=True)
class Conversion:
    quote: FxQuote
    sell: Decimal
    buy: Decimal


def _conversion(program: Program, account: Account, instruction: PaymentInstruction) -> Conversion | None:
    """Spend the instruction's FX quote, if any, inside the acceptance transaction:
    the quote is used if and only if the payment is accepted."""
    if instruction.quote_id is None:
        return None
    if not program.international_payments_enabled:
        raise ApiError(ErrorCode.PROVIDER_ERROR, "FX is not available on this program.")
    quote = fx_quote_consume(account=account, quote_id=str(instruction.quote_id))
    sell, buy = fx_quote_amounts(quote, sell_currency=account.currency)
    if instruction.currency and instruction.currency != quote.currency_two:
        raise validation_error("currency", f"Must be {quote.currency_two}, the currency the quote buys.")
    if instruction.amount is not None and instruction.amount != buy:
        raise validation_error("amount", f"Must be {buy:.2f}, the amount the quote buys.")
    return Conversion(quote=quote, sell=sell, buy=buy)


def payment_fee(program: Program, *, fee_waived: bool) -> Decimal:
    if fee_waived and not program.fee_waiver_allowed:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "This program does not allow waiving the payment fee.")
    return ZERO if fee_waived else program.fee_per_payment


def payment_accept(
    *, account: Account, instruction: PaymentInstruction, schedule: ScheduledPayment | None = None
) -> PaymentRequest:
    """Check limits, then funds (amount plus fee), then debit the account into
    clearing and create the request: PENDING, or PENDING_TM at the program's
    review threshold. Raises ApiError (422) when the payment is stopped; nothing
    is then written. `schedule` is the schedule the payment runs for, if any.
    """
    now = timezone.now()
    day = now.astimezone(UTC).date()
    # No savepoint of its own: a refusal rolls back the caller's transaction.
    # Callers that go on after a refusal (the schedule runner) open one around it.
    with transaction.atomic(savepoint=False):
        program = _program_of(account)
        conversion = _conversion(program, account, instruction)
        if conversion:
            debit, amount, currency = conversion.sell, conversion.buy, conversion.quote.currency_two
        elif instruction.amount is None:
            # Only a quote-funded payment may leave the amount to its quote.
            raise validation_error("amount", "This field is required.")
        else:
            debit, amount, currency = instruction.amount, instruction.amount, instruction.currency
        _check_per_payment_limit(program, debit)
        try:
            fee = payment_fee(program, fee_waived=instruction.fee_waived)
        except ApiError:
            _daily_limit_first(program, account, debit, day)
            raise
        legs = [
            Leg(amount=-(debit + fee), currency=account.currency, account=account),
            Leg(
                amount=amount,
                currency=currency,
                system_account=_system(account, SystemAccount.Kind.CLEARING, currency),
            ),
        ]
        if conversion:
            # The bank's FX position buys the account currency and sells the payee's.
            legs += [
                Leg(
                    amount=debit,
                    currency=account.currency,
                    system_account=_system(account, SystemAccount.Kind.FX, account.currency),
                ),
                Leg(
                    amount=-amount,
                    currency=currency,
                    system_account=_system(account, SystemAccount.Kind.FX, currency),
                ),
            ]
        if fee:
            legs.append(
                Leg(
                    amount=fee,
                    currency=account.currency,
                    system_account=_system(account, SystemAccount.Kind.FEES, account.currency),
                )
            )

        # The request's id is chosen now: the debit's posting names it on the
        # account's statement, in the same INSERT.
        request_id = uuid.uuid4()

        # The debit comes first: one statement takes the account's row lock (held
        # until this transaction ends), counts the debit against the day's
        # outbound limit and is refused if the limit or the balance (amount plus
        # fee) cannot take it. Two payments from one account serialise on it, so
        # neither passes the funds or the daily-limit check against money the
        # other is spending. It is the only lock the payment takes.
        def debit_account() -> LedgerTransaction:
            return ledger_post(
                program_id=account.program_id,
                sandbox=account.sandbox,
                kind=LedgerTransaction.Kind.PAYMENT,
                legs=legs,
                memo=instruction.reference,
                outbound=Outbound(
                    account_id=account.id, day=day, amount=debit, limit=program.daily_outbound_limit
                ),
                request=RequestRef(id=request_id, reference=instruction.reference),
            )

        try:
            entry = debit_account()
        except InsufficientBalance:
            # Refused, nothing changed: which rule refused it is read under the
            # lock, the limit first.
            locked = _daily_limit_first(program, account, debit, day)
            if locked.balance < debit + fee:
                raise ApiError(
                    ErrorCode.INSUFFICIENT_FUNDS,
                    f"The account holds {locked.balance:.2f} {locked.currency}; "
                    f"this payment needs {debit + fee:.2f} (amount {debit:.2f} plus fee {fee:.2f}).",
                ) from None
            # Both fit now (money arrived meanwhile); under our lock the debit holds.
            entry = debit_account()
        held = debit >= program.review_threshold
        request = PaymentRequest(
            id=request_id,
            program_id=account.program_id,
            sandbox=account.sandbox,
            customer_id=account.customer_id,
            account=account,
            status=PaymentRequest.Status.PENDING_TM if held else PaymentRequest.Status.PENDING,
            amount=amount,
            currency=currency,
            debit_amount=debit,
            fee=fee,
            fee_waived=instruction.fee_waived,
            reference=instruction.reference,
            purpose=instruction.purpose,
            charge_bearer=instruction.charge_bearer,
            beneficiary=instruction.beneficiary,
            payee=instruction.payee,
            virtual_iban=instruction.virtual_iban,
            schedule=schedule,
            fx_quote=conversion.quote if conversion else None,
            acceptance=entry,
        )
        insert_rows([request])
        if usage_day(request) != day:
            # Accepted across midnight: keep it on the day its limit was checked
            # against, so a failure gives the amount back to that day.
            PaymentRequest.objects.filter(id=request.id).update(created_at=now)
            request.created_at = now
        payment_request_event(
            request, EventType.PAYMENT_REQUEST_HELD if held else EventType.PAYMENT_REQUEST_ACCEPTED
        )
        return request


def _system(account: Account, kind: str, currency: str) -> SystemAccount:
    return system_account_for(account.program_id, account.sandbox, kind, currency)
