"""An accepted payment's unit of work, and the one writer that applies it.

`payments.decision` says whether a payment is accepted and what it moves. What
accepting it writes is made here once, by `payment_work`, for every door (the
payment route, transfers, schedule runs, batch items and their retry): a
`PaymentWork` holds the account's change with the conditions the decision put
on it (its legs, and the day's count the debit adds to), and the rows to
insert: the ledger movement and its postings (made by the ledger from the
legs, the only code that makes postings), the payment request and its event.

The writer renders a unit in one of three ways; each writes exactly the same
rows (`tests/payments/test_acceptance_rows.py` compares them column by column):
- `work_write`: statements in the caller's transaction, on any database;
- `work_write_at_once`: one statement, atomic on its own (PostgreSQL), which
  also writes the idempotency key's record with its answer;
- `works_write_bulk`: many units on accounts the caller locked, in a few
  statements (a batch's items).
Which rendering a payment gets is the caller's choice of speed, never of
outcome: the rows, and the rules that admitted them, are the same.
"""

import uuid
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from bankapi.idempotency import FirstUse, StoredResponse
from bankapi.ids import write_ordered_uuid
from bankapi.models import Account
from bankapi.row_objects import row_new
from bankapi.rows import fetch_one_bound, insert_rows, insert_select_sql, rows_pre_save, rows_stored
from events.recording import event_insert_sql, events_written
from payments.decision import ACCOUNT, Accepted, DailyCount, DecidedLeg, Plan, Snapshot, usage_day
from payments.events import (
    accepted_event_type,
    payment_request_event,
    payment_request_event_new,
    payment_requests_accepted,
)
from payments.ledger import (
    LedgerError,
    Leg,
    Movement,
    Outbound,
    RequestRef,
    holds_release,
    ledger_post,
    ledger_post_many,
    ledger_post_steps,
    system_account_for,
)
from payments.models import (
    Beneficiary,
    FxQuote,
    Hold,
    LedgerTransaction,
    PaymentRequest,
    ScheduledPayment,
    SystemAccount,
)
from payments.payees import Payee, payee_stored
from payments.services.limits import daily_outbound_store


@dataclass(frozen=True)
class WorkOrder:
    """What the request records of the instruction besides the decision's figures."""

    reference: str
    payee: Payee | None
    purpose: str = ""
    charge_bearer: str = ""
    beneficiary: Beneficiary | None = None
    virtual_iban: str = ""
    fee_waived: bool = False
    schedule: ScheduledPayment | None = None
    quote: FxQuote | None = None


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


@dataclass
class PaymentWork:
    """An accepted payment's unit of work (see the module). `request` is
    unsaved; its `acceptance` is the movement the writer posts. `count` is the
    day's count the debit adds to, checked in the account's conditional change
    (None for a unit of the bulk writer, whose caller decided on locked rows)."""

    account: Account
    legs: list[Leg]
    count: DailyCount | None
    request: PaymentRequest
    now: datetime

    @property
    def booked_as(self) -> RequestRef:
        return RequestRef(id=self.request.id, reference=self.request.reference)


def payment_work(
    *,
    account: Account,
    decided: Plan | Accepted,
    order: WorkOrder,
    now: datetime,
    system: SystemAccounts,
    count: DailyCount | None = None,
    request_id: uuid.UUID | None = None,
) -> PaymentWork:
    """The unit of work of a payment the decision accepted (`decided`: its plan,
    or its decision on a locked row)."""
    request = row_new(
        PaymentRequest,
        # Chosen now: the debit's posting names it on the account's statement, in the same INSERT.
        id=request_id or write_ordered_uuid(),
        program_id=account.program_id,
        sandbox=account.sandbox,
        customer_id=account.customer_id,
        account=account,
        status=decided.status,
        amount=decided.amount,
        currency=decided.currency,
        debit_amount=decided.debit,
        fee=decided.fee,
        fee_waived=order.fee_waived,
        reference=order.reference,
        purpose=order.purpose,
        charge_bearer=order.charge_bearer,
        beneficiary=order.beneficiary,
        payee=payee_stored(order.payee),
        virtual_iban=order.virtual_iban,
        schedule=order.schedule,
        fx_quote=order.quote,
    )
    return PaymentWork(
        account=account,
        legs=ledger_legs(account, decided.legs, system),
        count=count,
        request=request,
        now=now,
    )


def _keep_day(requests: list[PaymentRequest], now: datetime) -> list[PaymentRequest]:
    """Requests accepted across midnight stay on the day their limit was checked
    against (the decision's day, that of `now`), so a failure gives the amount
    back to that day: those moved."""
    moved = [request for request in requests if usage_day(request.created_at) != usage_day(now)]
    for request in moved:
        request.created_at = now
    return moved


def _keep_day_stored(requests: list[PaymentRequest], now: datetime) -> None:
    moved = _keep_day(requests, now)
    if moved:
        _requests(moved).update(created_at=now)


def _requests(requests: list[PaymentRequest]) -> QuerySet[PaymentRequest]:
    return PaymentRequest.objects.filter(id__in=[request.id for request in requests])


def work_write(work: PaymentWork) -> PaymentRequest:
    """Write the unit as statements in the caller's transaction: the account's
    conditional change takes its row lock (held until that transaction ends)
    and is refused, writing nothing, with InsufficientBalance when the funds or
    the day's count cannot take it."""
    assert work.count is not None, "a unit written alone carries its day's count"
    work.request.acceptance = ledger_post(
        program_id=work.account.program_id,
        sandbox=work.account.sandbox,
        kind=LedgerTransaction.Kind.PAYMENT,
        legs=work.legs,
        memo=work.request.reference,
        outbound=Outbound(account_id=work.account.id, count=work.count),
        request=work.booked_as,
    )
    insert_rows([work.request])
    _keep_day_stored([work.request], work.now)
    payment_request_event(work.request, accepted_event_type(work.request))
    return work.request


def work_write_at_once(
    work: PaymentWork,
    *,
    claim: FirstUse | None,
    respond: Callable[[PaymentRequest], StoredResponse],
    connection: Any,
) -> StoredResponse | None:
    """Write the unit in one statement (PostgreSQL, outside any transaction):
    data-modifying steps, each writing only if the account's conditional change
    (the same UPDATE `work_write` sends) returned its row, with the idempotency
    key's record (`claim`: its first use) and its answer (`respond(request)`).
    None when the account's row refused it: nothing was written. A key already
    recorded refuses the whole statement (`KeyTaken`)."""
    assert work.count is not None, "a unit written alone carries its day's count"
    name = connection.ops.quote_name
    debit = name("debit")
    steps = ledger_post_steps(
        program_id=work.account.program_id,
        sandbox=work.account.sandbox,
        kind=LedgerTransaction.Kind.PAYMENT,
        legs=work.legs,
        memo=work.request.reference,
        outbound=Outbound(account_id=work.account.id, count=work.count),
        request=work.booked_as,
        debit="debit",
        connection=connection,
    )
    if steps is None:
        return None
    request = work.request
    request.acceptance = steps.entry
    rows_pre_save([request])
    _keep_day([request], work.now)
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
    with claim.writing(connection) if claim else nullcontext():
        row = fetch_one_bound(connection, sql, params)
    # The statement's last SELECT answers one row whatever the debit did.
    assert row is not None
    balance, booked_at, event_id = row
    if balance is None:
        return None
    steps.stored(balance, booked_at, connection)
    rows_stored([request], connection)
    events_written([event], [event_id], connection)
    return response


def works_write_bulk(
    works: list[PaymentWork],
    *,
    program_id: uuid.UUID,
    sandbox: bool,
    locked: dict[uuid.UUID, Account],
    releasing: list[Hold],
    after: dict[uuid.UUID, Snapshot],
    now: datetime,
) -> list[PaymentRequest]:
    """Write many units in a few statements, on accounts the caller locked and
    decided on (`after`: each paying account as its accepted payments left it,
    whose day's count is stored), releasing first the holds the caller decided
    them on (`releasing`, open and locked: `holds_open`), at their booking."""
    holds_release(releasing, locked=locked, now=now)
    movements = [
        Movement(
            kind=LedgerTransaction.Kind.PAYMENT,
            legs=work.legs,
            memo=work.request.reference,
            request=work.booked_as,
        )
        for work in works
    ]
    entries = ledger_post_many(
        program_id=program_id, sandbox=sandbox, movements=movements, locked=locked, now=now
    )
    for work, entry in zip(works, entries, strict=True):
        work.request.acceptance = entry
    for account_id, decided in after.items():
        account = locked[account_id]
        if (account.balance, account.held) != (decided.balance, decided.held):
            # The decision and the writer disagree: roll everything back.
            raise LedgerError(
                f"Account {account_id} was left at {account.balance} with {account.held} held; "
                f"the decision left it at {decided.balance} with {decided.held} held"
            )
    requests = PaymentRequest.objects.bulk_create((work.request for work in works), batch_size=1000)
    daily_outbound_store(locked, {work.account.id: after[work.account.id] for work in works})
    _keep_day_stored(requests, now)
    payment_requests_accepted(requests)
    return requests
