"""Payment acceptance, one payment at a time: the payment route, transfers and
the schedule runner. What is accepted is decided by `payments.decision`; this
module resolves the instruction (its FX quote), has the decision made, hands
the accepted payment's unit of work to the writer (`payments.writer`) and
raises the decision's refusals.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import connections, router, transaction

from bankapi.clock import customer_now
from bankapi.errors import ApiError, validation_error
from bankapi.idempotency import FirstUse, StoredResponse
from bankapi.models import Account, Program
from payments.decision import Instruction, Plan, Refused, Rules, Snapshot, plan
from payments.errors import PaymentErrorCode
from payments.fx import fx_quote_amounts, fx_quote_consume
from payments.ledger import InsufficientBalance, lock_accounts
from payments.models import Beneficiary, FxQuote, PaymentRequest, ScheduledPayment
from payments.payees import Payee
from payments.writer import SystemAccounts, WorkOrder, payment_work, work_write, work_write_at_once


@dataclass(frozen=True)
class PaymentInstruction:
    """What to pay, already validated against the account (see payments.serializers).

    `payee` is the payee as paid: the beneficiary's details (as they are today)
    when `beneficiary` is set, the inline payee otherwise, None for a
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
    payee: Payee | None = None
    virtual_iban: str = ""
    fee_waived: bool = False
    quote_id: uuid.UUID | None = None


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
        raise ApiError(PaymentErrorCode.PROVIDER_ERROR, "FX is not available on this program.")
    quote = fx_quote_consume(account=account, quote_id=str(instruction.quote_id))
    sell, buy = fx_quote_amounts(quote, sell_currency=account.currency)
    if instruction.currency and instruction.currency != quote.currency_two:
        raise validation_error("currency", f"Must be {quote.currency_two}, the currency the quote buys.")
    if instruction.amount is not None and instruction.amount != buy:
        raise validation_error("amount", f"Must be {buy:.2f}, the amount the quote buys.")
    return Conversion(quote=quote, sell=sell, buy=buy)


def payment_fee(program: Program, *, fee_waived: bool) -> Decimal:
    """The fee of a payment from this program; ApiError (NOT_SUPPORTED) for a
    waiver the program does not allow."""
    fee = Rules.of(program).fee(fee_waived=fee_waived)
    if isinstance(fee, Refused):
        raise fee.error()
    return fee


def order_of(
    instruction: PaymentInstruction, *, schedule: ScheduledPayment | None = None, quote: FxQuote | None = None
) -> WorkOrder:
    """What the request records of the instruction besides the decision's figures."""
    return WorkOrder(
        reference=instruction.reference,
        payee=instruction.payee,
        purpose=instruction.purpose,
        charge_bearer=instruction.charge_bearer,
        beneficiary=instruction.beneficiary,
        virtual_iban=instruction.virtual_iban,
        fee_waived=instruction.fee_waived,
        schedule=schedule,
        quote=quote,
    )


def _plan(
    program: Program,
    account: Account,
    instruction: PaymentInstruction,
    conversion: Conversion | None,
    now: datetime,
) -> Plan | Refused:
    """The decision's account-free part for the instruction (converted through
    its quote, when it has one)."""
    if conversion:
        debit, amount, currency = conversion.sell, conversion.buy, conversion.quote.currency_two
    elif instruction.amount is None:
        # Only a quote-funded payment may leave the amount to its quote.
        raise validation_error("amount", "This field is required.")
    else:
        debit, amount, currency = instruction.amount, instruction.amount, instruction.currency
    return plan(
        Rules.of(program),
        Instruction(
            debit=debit,
            amount=amount,
            currency=currency,
            fee_waived=instruction.fee_waived,
            converted=conversion is not None,
        ),
        account_currency=account.currency,
        now=now,
    )


def payment_accept(
    *, account: Account, instruction: PaymentInstruction, schedule: ScheduledPayment | None = None
) -> PaymentRequest:
    """Accept or refuse the payment as `payments.decision` decides, and write its
    unit of work (`payments.writer`) as statements in this transaction: the
    account debited into clearing, the request (PENDING, or PENDING_TM at the
    program's review threshold) and its event. Raises ApiError (422) when the
    payment is refused; nothing is then written. `schedule` is the schedule the
    payment runs for, if any.
    """
    now = customer_now(account.customer_id)
    # No savepoint of its own: a refusal rolls back the caller's transaction.
    # Callers that go on after a refusal (the schedule runner) open one around it.
    with transaction.atomic(savepoint=False):
        program = _program_of(account)
        conversion = _conversion(program, account, instruction)
        planned = _plan(program, account, instruction, conversion, now)
        if isinstance(planned, Refused):
            raise planned.error()
        work = payment_work(
            account=account,
            decided=planned,
            order=order_of(instruction, schedule=schedule, quote=conversion.quote if conversion else None),
            now=now,
            system=SystemAccounts(),
            count=planned.count,
        )
        # The plan's requirements on the account row (funds for what its legs
        # take, the day's count under the limit) are applied in the one
        # statement that debits it: that statement takes the account's row lock
        # (held until this transaction ends), counts the debit and is refused if
        # either requirement fails. Two payments from one account serialise on
        # it, so neither passes a check against money the other is spending. It
        # is the only lock the payment takes.
        if planned.deferred is None and planned.count.admits_any():
            try:
                return work_write(work)
            except InsufficientBalance:
                pass
        # Refused by the statement, or sure to be (a debit above the whole daily
        # limit, a rule that answers after that limit): the decision on the
        # locked row says which rule refuses it.
        decided = planned.decide(Snapshot.of(lock_accounts([account.id])[account.id]))
        if isinstance(decided, Refused):
            raise decided.error()
        # It fits now (money arrived meanwhile); under our lock the debit holds.
        return work_write(work)


def payment_accept_at_once(
    *,
    account: Account,
    instruction: PaymentInstruction,
    claim: FirstUse | None,
    respond: Callable[[PaymentRequest], StoredResponse],
) -> tuple[PaymentRequest, StoredResponse] | None:
    """`payment_accept` of a payment the account accepts, with its unit of work
    written in one statement (`payments.writer.work_write_at_once`: PostgreSQL,
    outside any transaction) together with the idempotency key's record
    (`claim`: its first use) and its answer (`respond(request)`). A key already
    recorded refuses the whole statement: `KeyTaken`, nothing written.

    None when nothing was written and `payment_accept` must decide: another
    database, an FX quote, a plan that is refused or not admitted at once, or an
    account row the debit's conditions refused (`payment_accept` says which rule).
    """
    connection = connections[router.db_for_write(PaymentRequest)]
    if connection.vendor != "postgresql" or instruction.quote_id is not None or instruction.amount is None:
        return None
    now = customer_now(account.customer_id)
    planned = _plan(_program_of(account), account, instruction, None, now)
    if isinstance(planned, Refused) or planned.deferred is not None or not planned.count.admits_any():
        return None
    work = payment_work(
        account=account,
        decided=planned,
        order=order_of(instruction),
        now=now,
        system=SystemAccounts(),
        count=planned.count,
    )
    response = work_write_at_once(work, claim=claim, respond=respond, connection=connection)
    if response is None:
        return None
    return work.request, response
