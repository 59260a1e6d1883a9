"""Payment acceptance, one payment at a time: the payment route, transfers and
the schedule runner. What is accepted is decided by `payments.decision`; this
module resolves the instruction (its FX quote), applies the decision (the
ledger movement, the request, its event) and raises the decision's refusals.
"""

import uuid
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import connections, router, transaction
from django.utils import timezone

from bankapi.errors import ApiError, validation_error
from bankapi.idempotency import FirstUse, StoredResponse
from bankapi.models import Account, Program
from bankapi.rows import insert_rows, insert_select_sql, rows_pre_save, rows_stored, sql_bound
from events.recording import event_insert_sql, events_written
from payments.decision import (
    ACCOUNT,
    DecidedLeg,
    Instruction,
    Plan,
    Refused,
    Rules,
    Snapshot,
    plan,
    usage_day,
)
from payments.errors import PaymentErrorCode
from payments.events import accepted_event_type, payment_request_event, payment_request_event_new
from payments.fx import fx_quote_amounts, fx_quote_consume
from payments.ledger import (
    InsufficientBalance,
    Leg,
    Outbound,
    RequestRef,
    ledger_post,
    ledger_post_steps,
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
from payments.payees import Payee, payee_stored


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


class SystemAccounts:
    """System accounts looked up once per call, not once per payment."""

    def __init__(self) -> None:
        self._rows: dict[tuple[uuid.UUID, bool, str, str], SystemAccount] = {}

    def get(self, account: Account, kind: str, currency: str) -> SystemAccount:
        key = (account.program_id, account.sandbox, kind, currency)
        if key not in self._rows:
            self._rows[key] = system_account_for(*key)
        return self._rows[key]


def ledger_legs(account: Account, legs: Iterable[DecidedLeg], system: SystemAccounts) -> list[Leg]:
    """The decision's legs as the ledger posts them, on `account` and its program's system accounts."""
    return [
        Leg(amount=leg.amount, currency=leg.currency, account=account)
        if leg.holder == ACCOUNT
        else Leg(
            amount=leg.amount,
            currency=leg.currency,
            system_account=system.get(account, leg.holder, leg.currency),
        )
        for leg in legs
    ]


def requests_keep_day(requests: list[PaymentRequest], now: datetime) -> None:
    """Requests accepted across midnight stay on the day their limit was checked
    against (the decision's day, that of `now`), so a failure gives the amount
    back to that day."""
    moved = [request for request in requests if usage_day(request.created_at) != usage_day(now)]
    if moved:
        PaymentRequest.objects.filter(id__in=[request.id for request in moved]).update(created_at=now)
        for request in moved:
            request.created_at = now


def _payment_request(
    request_id: uuid.UUID,
    account: Account,
    instruction: PaymentInstruction,
    planned: Plan,
    acceptance: LedgerTransaction,
    *,
    schedule: ScheduledPayment | None = None,
    quote: FxQuote | None = None,
) -> PaymentRequest:
    """The payment request an accepted payment makes (not yet saved), whichever
    path writes it: the instruction as the plan decided it, and its movement."""
    return PaymentRequest(
        id=request_id,
        program_id=account.program_id,
        sandbox=account.sandbox,
        customer_id=account.customer_id,
        account=account,
        status=planned.status,
        amount=planned.amount,
        currency=planned.currency,
        debit_amount=planned.debit,
        fee=planned.fee,
        fee_waived=instruction.fee_waived,
        reference=instruction.reference,
        purpose=instruction.purpose,
        charge_bearer=instruction.charge_bearer,
        beneficiary=instruction.beneficiary,
        payee=payee_stored(instruction.payee),
        virtual_iban=instruction.virtual_iban,
        schedule=schedule,
        fx_quote=quote,
        acceptance=acceptance,
    )


def payment_accept(
    *, account: Account, instruction: PaymentInstruction, schedule: ScheduledPayment | None = None
) -> PaymentRequest:
    """Accept or refuse the payment as `payments.decision` decides, and apply an
    acceptance: debit the account into clearing and create the request (PENDING,
    or PENDING_TM at the program's review threshold). Raises ApiError (422) when
    the payment is refused; nothing is then written. `schedule` is the schedule
    the payment runs for, if any.
    """
    now = timezone.now()
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
        planned = plan(
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
        if isinstance(planned, Refused):
            raise planned.error()
        legs = ledger_legs(account, planned.legs, SystemAccounts())

        # The request's id is chosen now: the debit's posting names it on the
        # account's statement, in the same INSERT.
        request_id = uuid.uuid4()

        # The plan's requirements on the account row (funds for what its legs
        # take, the day's count under the limit) are applied in the one
        # statement that debits it: that statement takes the account's row lock
        # (held until this transaction ends), counts the debit and is refused if
        # either requirement fails. Two payments from one account serialise on
        # it, so neither passes a check against money the other is spending. It
        # is the only lock the payment takes.
        def debit_account() -> LedgerTransaction:
            return ledger_post(
                program_id=account.program_id,
                sandbox=account.sandbox,
                kind=LedgerTransaction.Kind.PAYMENT,
                legs=legs,
                memo=instruction.reference,
                outbound=Outbound(account_id=account.id, count=planned.count),
                request=RequestRef(id=request_id, reference=instruction.reference),
            )

        entry = None
        if planned.deferred is None and planned.count.admits_any():
            try:
                entry = debit_account()
            except InsufficientBalance:
                pass
        if entry is None:
            # Refused by the statement, or sure to be (a debit above the whole
            # daily limit, a rule that answers after that limit): the decision
            # on the locked row says which rule refuses it.
            decided = planned.decide(Snapshot.of(lock_accounts([account.id])[account.id]))
            if isinstance(decided, Refused):
                raise decided.error()
            # It fits now (money arrived meanwhile); under our lock the debit holds.
            entry = debit_account()
        request = _payment_request(
            request_id,
            account,
            instruction,
            planned,
            entry,
            schedule=schedule,
            quote=conversion.quote if conversion else None,
        )
        insert_rows([request])
        requests_keep_day([request], now)
        payment_request_event(request, accepted_event_type(request))
        return request


def payment_accept_at_once(
    *,
    account: Account,
    instruction: PaymentInstruction,
    claim: FirstUse | None,
    respond: Callable[[PaymentRequest], StoredResponse],
) -> tuple[PaymentRequest, StoredResponse] | None:
    """`payment_accept` of a payment the account accepts, in one statement
    (PostgreSQL, outside any transaction): the same decision (`plan`, and the
    row's requirements in the debit's conditional UPDATE) and the same rows (the
    ledger movement and postings, the request, its event), written by
    data-modifying steps that each write only if the debit did, with the
    idempotency key's record (`claim`: its first use) and its answer
    (`respond(request)`), all committed together by the statement. A key
    already recorded refuses the whole statement: `KeyTaken`, nothing written.

    None when nothing was written and `payment_accept` must decide: another
    database, an FX quote, a plan that is refused or not admitted at once, or an
    account row the debit's conditions refused (`payment_accept` says which rule).
    """
    connection = connections[router.db_for_write(PaymentRequest)]
    if connection.vendor != "postgresql" or instruction.quote_id is not None or instruction.amount is None:
        return None
    now = timezone.now()
    program = _program_of(account)
    planned = plan(
        Rules.of(program),
        Instruction(
            debit=instruction.amount,
            amount=instruction.amount,
            currency=instruction.currency,
            fee_waived=instruction.fee_waived,
        ),
        account_currency=account.currency,
        now=now,
    )
    if isinstance(planned, Refused) or planned.deferred is not None or not planned.count.admits_any():
        return None
    name = connection.ops.quote_name
    debit = name("debit")
    request_id = uuid.uuid4()
    steps = ledger_post_steps(
        program_id=account.program_id,
        sandbox=account.sandbox,
        kind=LedgerTransaction.Kind.PAYMENT,
        legs=ledger_legs(account, planned.legs, SystemAccounts()),
        memo=instruction.reference,
        outbound=Outbound(account_id=account.id, count=planned.count),
        request=RequestRef(id=request_id, reference=instruction.reference),
        debit="debit",
        connection=connection,
    )
    if steps is None:
        return None
    request = _payment_request(request_id, account, instruction, planned, steps.entry)
    rows_pre_save([request])
    # As `requests_keep_day`: accepted across midnight, it stays on the decision's day.
    if usage_day(request.created_at) != usage_day(now):
        request.created_at = now
    event = payment_request_event_new(request, accepted_event_type(request))
    response = respond(request)
    parts: list[tuple[str, tuple[str, list]]] = [("debit", steps.debit)]
    parts += [(f"ledger_{index}", write) for index, write in enumerate(steps.writes)]
    parts.append(("request", insert_select_sql([request], debit, connection)))
    parts.append(("event", event_insert_sql(event, debit, connection)))
    if claim:
        parts.append(("key", claim.record_sql(connection, response, source=debit)))
    # Only quoted names and the steps' own text go into it; every value is a parameter.
    steps_sql = ", ".join(f"{name(step)} AS ({text})" for step, (text, _) in parts)
    event_id = f"(SELECT {name('id')} FROM {name('event')})"  # noqa: S608
    answer = f"{debit}.{name('balance')}, {debit}.{name('last_booked_at')}, {event_id}"
    sql = f"WITH {steps_sql} SELECT {answer} FROM (SELECT 1) {name('one')} LEFT JOIN {debit} ON TRUE"  # noqa: S608
    params = [param for _, (_, step_params) in parts for param in step_params]
    with claim.writing(connection) if claim else nullcontext(), connection.cursor() as cursor:
        cursor.execute(sql_bound(connection, sql, params))
        balance, booked_at, event_id = cursor.fetchone()
    if balance is None:
        return None
    steps.stored(balance, booked_at, connection)
    rows_stored([request], connection)
    events_written([event], [event_id], connection)
    return request, response
