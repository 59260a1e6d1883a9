"""Whatever happens to an account (payments, settlements, failures, batch
payments, schedule runs, over several days), every statement of every period
reconciles: with itself, with the statements around it, and with the raw
ledger postings (summed afresh, not read from the running balances).

Statements are also read between the steps, in every format, so the days they
close are stored (`StatementDay`) and later statements read them: each
statement's bytes are those written from the ledger alone, and the check run
after every test compares every stored day with the ledger."""

import copy
import itertools
import json
import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from authn.models import User
from bankapi.errors import ApiError
from bankapi.models import Account, Customer
from batches.services.processing import batch_process
from payments.models import LedgerPosting, PaymentRequest, StatementDay
from payments.payees import Payee, UkAccount
from payments.selectors.ledger import balance_as_of, day_start
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.schedules import schedule_create, scheduled_payments_run
from payments.services.settlement import payment_fail, payment_settle
from payments.statement_formats import JSON_LAYOUT, LAYOUTS, statement_json, statement_read
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.support.factories import custodian_with_clients, funded_account

START = datetime(2026, 6, 1, 21, 30, tzinfo=UTC)
PAYEE = Payee(name="Jane", account=UkAccount(sort_code="200000", account_number="55779911"))
MICROSECOND = timedelta(microseconds=1)
_numbers = itertools.count(1)

AMOUNTS = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("60.00"), places=2)
OPERATIONS = st.one_of(
    st.tuples(st.just("pay"), AMOUNTS),
    st.tuples(st.just("settle"), st.integers(0, 9)),
    st.tuples(st.just("fail"), st.integers(0, 9)),
    st.tuples(st.just("batch"), st.lists(AMOUNTS, min_size=1, max_size=3)),
    st.tuples(st.just("schedule"), AMOUNTS),
    # Minutes: a few cross midnight, some keep the same instant.
    st.tuples(st.just("later"), st.sampled_from([0, 1, 90, 24 * 60, 26 * 60 + 7])),
)


def posted_before(account: Account, moment: datetime) -> Decimal:
    # Summed here in Decimal: exact on every database.
    amounts = LedgerPosting.objects.filter(account=account, created_at__lt=moment).values_list(
        "amount", flat=True
    )
    total = sum(amounts, Decimal("0.00"))
    return total


def _open_requests(account: Account) -> list[PaymentRequest]:
    statuses = [PaymentRequest.Status.PENDING, PaymentRequest.Status.PENDING_TM]
    return list(
        PaymentRequest.objects.filter(account=account, status__in=statuses).order_by("created_at", "id")
    )


def _apply(operation: tuple, account: Account, custodian_user: User, clock) -> None:
    kind, value = operation
    today = datetime.now(UTC).date()
    if kind == "pay":
        instruction = PaymentInstruction(amount=value, currency="GBP", reference="Property", payee=PAYEE)
        try:
            with transaction.atomic():
                payment_accept(account=Account.objects.get(id=account.id), instruction=instruction)
        except ApiError:
            pass  # Refused (funds): nothing changed.
    elif kind in ("settle", "fail"):
        candidates = _open_requests(account)
        if kind == "settle":
            candidates = [r for r in candidates if r.status == PaymentRequest.Status.PENDING]
        if candidates:
            chosen = candidates[value % len(candidates)]
            payment_settle(chosen) if kind == "settle" else payment_fail(chosen, "Returned by the bank")
    elif kind == "batch":
        batch = batch_submitted(custodian_user, [payment(account, str(amount)) for amount in value])
        batch_process(str(batch.id), chunk_size=2)
    elif kind == "schedule":
        instruction = PaymentInstruction(
            amount=value, currency="GBP", reference="Standing order", payee=PAYEE
        )
        schedule_create(account=account, instruction=instruction, anchor=today, frequency="NEVER")
        scheduled_payments_run(today)
    else:
        clock.shift(timedelta(minutes=value))


def _check_statement(account: Account, first, last) -> tuple[Decimal, Decimal]:
    # The account as a request reads it: its latest booking time says which days are closed.
    account = Account.objects.get(id=account.id)
    body = statement_json(statement_read(account, first, last, JSON_LAYOUT))
    # Every line written from the ledger: an account that has booked nothing
    # has no closed day, so nothing stored is read (nor stored).
    unstored = copy.copy(account)
    unstored.last_booked_at = None
    assert body == statement_json(statement_read(unstored, first, last, JSON_LAYOUT))
    # The JSON body the route answers, parsed.
    statement = json.loads(body)["data"]
    start, end = day_start(first), day_start(last + timedelta(days=1))
    opening, closing = Decimal(statement["openingBalance"]), Decimal(statement["closingBalance"])
    lines = statement["entries"]
    # Against the raw postings, not the running balances.
    assert opening == posted_before(account, start)
    assert closing == posted_before(account, end)
    assert opening == balance_as_of(account, start - MICROSECOND)
    assert closing == balance_as_of(account, end - MICROSECOND)
    running = opening
    for line in lines:
        booked_at, amount = datetime.fromisoformat(line["bookedAt"]), Decimal(line["amount"])
        assert start <= booked_at < end and amount > 0
        running += amount if line["creditDebit"] == "CRDT" else -amount
        assert Decimal(line["balanceAfter"]) == running
    # Of the postings booked at one instant, the last one's balance is the instant's.
    for moment, line in {line["bookedAt"]: line for line in lines}.items():
        instant = datetime.fromisoformat(moment) + MICROSECOND
        assert Decimal(line["balanceAfter"]) == posted_before(account, instant)
    assert running == closing
    assert (
        len(lines)
        == LedgerPosting.objects.filter(account=account, created_at__gte=start, created_at__lt=end).count()
    )
    return opening, closing


@pytest.fixture
def client_account_maker(program):
    setup = custodian_with_clients(program, clients=0)
    custodian, user = setup.custodian, setup.user

    def make() -> Account:
        customer = Customer.objects.create(
            program_id=custodian.program_id, name="Client", custodian=custodian
        )
        number = f"{next(_numbers):08d}"
        return funded_account(customer, "150.00", sort_code="300009", account_number=number)

    return make, user


@settings(
    max_examples=int(os.environ.get("STATEMENT_PROPERTY_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(OPERATIONS, min_size=1, max_size=14), data=st.data())
def test_every_statement_reconciles_whatever_happened(client_account_maker, operations, data):
    make, custodian_user = client_account_maker
    with time_machine.travel(START, tick=False) as clock:
        account = make()
        for operation in operations:
            _apply(operation, account, custodian_user, clock)
            # Now and then a statement of everything so far, in any format: its closed days are stored.
            layout = data.draw(st.sampled_from([None, *LAYOUTS]), label="read")
            if layout is not None:
                today = datetime.now(UTC).date()
                statement_read(Account.objects.get(id=account.id), START.date(), today, layout)
        today = datetime.now(UTC).date()
        days = [START.date() + timedelta(days=n) for n in range((today - START.date()).days + 1)]

        first = data.draw(st.sampled_from(days), label="from")
        last = data.draw(st.sampled_from([day for day in days if day >= first]), label="to")
        opening, closing = _check_statement(account, first, last)
        # Split anywhere: the two halves meet, and together they are the whole.
        split = data.draw(
            st.sampled_from([day for day in days if first <= day < last] or [None]), label="split"
        )
        if split is not None:
            left = _check_statement(account, first, split)
            right = _check_statement(account, split + timedelta(days=1), last)
            assert (left[0], left[1], right[1]) == (opening, right[0], closing)
        # The whole history up to today ends at the account's balance.
        assert _check_statement(account, days[0], today)[1] == Account.objects.get(id=account.id).balance
        # Every closed day of the history is stored now (in JSON at least).
        closed = Account.objects.get(id=account.id).last_booked_at.date() - timedelta(days=1)
        json_days = StatementDay.objects.filter(account_id=account.id, layout=JSON_LAYOUT.key)
        assert sorted(json_days.values_list("day", flat=True)) == [day for day in days if day <= closed]
