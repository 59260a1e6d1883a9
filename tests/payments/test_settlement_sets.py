"""Settlement works in sets: a chunk of PENDING requests claimed with SKIP
LOCKED and settled in a handful of statements whatever its size, each payment
keeping its own movement, postings, statement entries and event; a run covers
what was pending when it started; several settling at once split the work."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bankapi.models import Customer, Program
from events.models import Event
from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest, StatementEntry
from payments.services.settlement import payments_settle_chunk, payments_settle_pending
from tests.conftest import requires_postgres
from tests.payments.test_settlement import accept, system_total
from tests.support.factories import ProgramFactory, funded_account
from tests.support.race import run_at_once


def live_accounts(program: Program, count: int, currency: str = "GBP", balance: str = "1000.00"):
    customer = Customer.objects.create(program=program, sandbox=False, name="Live")
    return [funded_account(customer, balance, currency) for _ in range(count)]


def statements_to_settle(count: int, program: Program) -> int:
    for account in live_accounts(program, 2):
        for n in range(count // 2):
            accept(account, "1.00", reference=f"Invoice {n}")
    with CaptureQueriesContext(connection) as captured:
        assert payments_settle_chunk(sandbox=False) == count
    return len(captured)


@requires_postgres
def test_a_chunk_costs_the_same_statements_for_ten_payments_or_two_hundred(db):
    few = statements_to_settle(10, ProgramFactory())
    many = statements_to_settle(200, ProgramFactory())

    assert few == many
    assert many / 200 <= 0.1


def test_a_chunk_costs_about_a_tenth_of_a_statement_a_payment_or_less(db):
    # SQLite splits an INSERT of many rows at its parameter limit (999), so its
    # count grows by steps with the rows' columns (a posting's 15 since it names
    # the party outside the bank: 66 postings an INSERT); PostgreSQL's does not
    # grow at all (above).
    assert statements_to_settle(200, ProgramFactory()) / 200 <= 0.11


def test_each_settled_payment_keeps_its_movement_postings_entries_and_event(db):
    program = ProgramFactory(fee_per_payment=Decimal("0.25"))
    gbp, eur = live_accounts(program, 1)[0], live_accounts(program, 1, "EUR")[0]
    other = live_accounts(ProgramFactory(), 1)[0]
    requests = [accept(gbp, "10.00"), accept(eur, "20.00"), accept(other, "30.00"), accept(gbp, "5.00")]
    clearing_before = system_total(gbp, "CLEARING")

    assert payments_settle_pending(sandbox=False) == 4

    for request in requests:
        request.refresh_from_db()
        assert request.status == "SETTLED" and request.settled_at is not None
        movement = LedgerTransaction.objects.get(key=f"settle:{request.id}")
        assert movement.kind == "SETTLEMENT" and movement.program_id == request.program_id
        legs = sorted(LedgerPosting.objects.filter(transaction=movement).values_list("amount", "currency"))
        assert legs == [(-request.amount, request.currency), (request.amount, request.currency)]
        lines = StatementEntry.objects.filter(payment_request=request, ledger_transaction=movement)
        assert sorted((e.direction, e.amount, e.reference) for e in lines) == sorted(
            [("DEBIT", request.debit_amount, request.reference)]
            + ([("DEBIT", request.fee, "Payment fee")] if request.fee else [])
        )
        settled = Event.objects.get(resource_id=str(request.id), type="payment_request.settled")
        assert settled.data["status"] == "SETTLED" and settled.program_id == request.program_id
    assert system_total(gbp, "CLEARING") == clearing_before - Decimal("15.00")


def test_a_run_covers_what_was_pending_when_it_started(db):
    account = live_accounts(ProgramFactory(), 1)[0]
    old = accept(account)
    new = accept(account)
    started = timezone.now()
    PaymentRequest.objects.filter(id=new.id).update(created_at=started + timedelta(seconds=1))

    assert payments_settle_pending(sandbox=False, created_until=started, chunk_size=1) == 1

    assert PaymentRequest.objects.get(id=old.id).status == "SETTLED"
    assert PaymentRequest.objects.get(id=new.id).status == "PENDING"


def test_a_heartbeat_is_given_after_each_chunk(db):
    account = live_accounts(ProgramFactory(), 1)[0]
    for _ in range(5):
        accept(account)
    beats = []

    assert payments_settle_pending(sandbox=False, chunk_size=2, heartbeat=lambda: beats.append(1)) == 5

    assert len(beats) == 3


def test_held_failed_and_sandbox_requests_are_not_claimed(account, db):
    live = live_accounts(Program.objects.get(id=account.program_id), 1, balance="20000.00")[0]
    held = accept(live, "12000.00")
    failed = accept(live)
    PaymentRequest.objects.filter(id=failed.id).update(status="FAILED")
    sandbox = accept(account)

    assert payments_settle_pending(sandbox=False) == 0

    assert [PaymentRequest.objects.get(id=r.id).status for r in (held, failed, sandbox)] == [
        "PENDING_TM",
        "FAILED",
        "PENDING",
    ]


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_four_settling_at_once_split_the_backlog_and_settle_each_payment_once(transactional_db):
    program = ProgramFactory()
    accounts = live_accounts(program, 4)
    requests = [accept(accounts[n % 4], "1.00") for n in range(400)]

    counts = run_at_once(4, lambda _: payments_settle_pending(sandbox=False, chunk_size=25))

    assert sum(counts) == 400
    assert sum(1 for count in counts if count) >= 2
    assert PaymentRequest.objects.filter(status="SETTLED").count() == 400
    assert LedgerTransaction.objects.filter(kind="SETTLEMENT").count() == 400
    assert StatementEntry.objects.filter(payment_request__in=requests, direction="DEBIT").count() == 400
    assert Event.objects.filter(type="payment_request.settled").count() == 400
    assert system_total(accounts[0], "CLEARING") == Decimal("0.00")


@requires_postgres
def test_the_claim_reads_the_partial_index_of_pending_requests(db):
    with connection.cursor() as cursor:
        # Whatever the table's size here: a plan that reads the rows in the
        # claim's order without a scan of the table or a sort.
        for setting in ("enable_seqscan", "enable_sort", "enable_incremental_sort"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM payments_paymentrequest WHERE status = 'PENDING' AND sandbox = false "
            "ORDER BY created_at, id LIMIT 500 FOR UPDATE SKIP LOCKED"
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "payment_request_pending_idx" in plan
