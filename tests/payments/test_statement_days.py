"""The lines of closed days, stored once per account and format and reused by
every statement that covers them: stored only once the day can no longer
change, never stale, and the statement's bytes the same whether its days were
stored or written afresh."""

import io
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from bankapi.models import Account
from payments.ledger import ledger_check, ledger_fund_account
from payments.models import StatementDay
from payments.services.statement_days import statement_days_store
from payments.statement_formats import CAMT053_LAYOUT, CSV_LAYOUT, JSON_LAYOUT, statement_read
from payments.tasks import store_statement_days
from tests.conftest import requires_postgres
from tests.payments.test_statements import customer_token, statement
from tests.support.factories import funded_account
from tests.support.race import run_at_once

# "Today" is read more than once: a run across midnight must read one day.
pytestmark = pytest.mark.usefixtures("clear_of_midnight")

LAYOUTS = {"json": JSON_LAYOUT, "csv": CSV_LAYOUT, "camt053": CAMT053_LAYOUT}
D = date(2026, 3, 9)


def at(day: date, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, second, micro, tzinfo=UTC)


def fund(account: Account, amount: str, memo: str = "Funding") -> None:
    ledger_fund_account(account, Decimal(amount), key=f"test:{uuid.uuid4()}", memo=memo)


def stored(account: Account, fmt: str = "json") -> dict[date, int]:
    """The account's stored days in `fmt`: entries by day."""
    rows = StatementDay.objects.filter(account_id=account.id, layout=LAYOUTS[fmt].key)
    return dict(rows.order_by("day").values_list("day", "entries"))


def body(response) -> bytes:
    assert response.status_code == 200, response.content[:300]
    return response.content


def fresh_body(api, auth, account, first, last, fmt) -> bytes:
    """The statement with no day stored: every line written from the ledger."""
    kept = list(StatementDay.objects.filter(account_id=account.id).values())
    StatementDay.objects.filter(account_id=account.id).delete()
    try:
        return body(statement(api, auth, account, first, last, fmt))
    finally:
        StatementDay.objects.filter(account_id=account.id).delete()
        StatementDay.objects.bulk_create(StatementDay(**row) for row in kept)


@pytest.mark.parametrize("fmt", ["json", "csv", "camt053"])
def test_a_closed_day_is_stored_once_and_reused_with_the_same_bytes(api, customer, payer, fmt):
    with time_machine.travel(at(D, 10), tick=False) as clock:
        account = funded_account(customer, "100.00")
        fund(account, "2.50", 'Quote " and \u2028 separator, <b>')
        clock.move_to(at(D + timedelta(days=1), 9))
        fund(account, "1.00")
        auth = customer_token(payer)
        first = body(statement(api, auth, account, D - timedelta(days=1), D + timedelta(days=1), fmt))

        # D-1 (empty) and D are closed: the account booked on D+1. D+1 is not.
        assert stored(account, fmt) == {D - timedelta(days=1): 0, D: 2}
        piece = bytes(StatementDay.objects.get(account_id=account.id, layout=LAYOUTS[fmt].key, day=D).lines)
        assert piece.count(b"Quote") == 1
        assert ("\u2028".encode() in piece) == (fmt != "json")
        with CaptureQueriesContext(connection) as queries:
            again = body(statement(api, auth, account, D - timedelta(days=1), D + timedelta(days=1), fmt))
        # The balances and D+1's range; D's lines are read as stored.
        ranges = [q["sql"] for q in queries if "ledgerposting" in q["sql"].lower()]
        assert len(ranges) == 2
        assert StatementDay.objects.filter(account_id=account.id).count() == 2

        if fmt == "camt053":
            # The message id and the creation time differ from call to call.
            first, again = (b.split(b"<Stmt>", 1)[1].split(b"<CreDtTm>", 1)[0] for b in (first, again))
            assert first.startswith(b"<Id>") and again == first
        else:
            assert again == first
            assert fresh_body(api, auth, account, D - timedelta(days=1), D + timedelta(days=1), fmt) == first


def test_the_stored_piece_is_what_the_statement_carries(api, customer, payer):
    """What is stored is used: a statement of a stored day reads the piece, not the ledger."""
    with time_machine.travel(at(D, 10), tick=False) as clock:
        account = funded_account(customer, "100.00")
        clock.move_to(at(D + timedelta(days=1), 9))
        fund(account, "1.00")
        auth = customer_token(payer)
        statement(api, auth, account, D, D, "csv")
        row = StatementDay.objects.get(account_id=account.id, day=D)
        StatementDay.objects.filter(id=row.id).update(lines=bytes(row.lines).replace(b"Funding", b"Marked"))
        try:
            text = body(statement(api, auth, account, D, D, "csv")).decode()
        finally:
            StatementDay.objects.filter(id=row.id).update(lines=row.lines)
    assert "Marked" in text and "Funding" not in text


def test_a_day_is_not_stored_while_the_account_has_booked_nothing_after_it(api, customer, payer):
    with time_machine.travel(at(D, 10), tick=False) as clock:
        account = funded_account(customer, "100.00")
        # Days go by, the account books nothing: its last booking is on D.
        clock.move_to(at(D + timedelta(days=3), 12))
        auth = customer_token(payer)
        body(statement(api, auth, account, D, D + timedelta(days=3)))
        assert stored(account) == {}

        body(statement(api, auth, account, D - timedelta(days=2), D + timedelta(days=3)))
        assert stored(account) == {D - timedelta(days=2): 0, D - timedelta(days=1): 0}

        # A posting now closes D and the two days after it (it is booked on D+3).
        fund(account, "1.00")
        body(statement(api, auth, account, D, D + timedelta(days=3)))
        assert stored(account) == {
            D - timedelta(days=2): 0,
            D - timedelta(days=1): 0,
            D: 1,
            D + timedelta(days=1): 0,
            D + timedelta(days=2): 0,
        }


def test_a_posting_booked_after_a_statement_was_read_is_in_the_next_one_today(api, customer, customer_auth):
    account = funded_account(customer, "100.00")
    today = datetime.now(UTC).date()
    before = statement(api, customer_auth, account, today - timedelta(days=3), today).json()["data"]
    fund(account, "4.00", "Later")
    after = statement(api, customer_auth, account, today - timedelta(days=3), today).json()["data"]

    assert [e["reference"] for e in after["entries"]] == [e["reference"] for e in before["entries"]] + [
        "Later"
    ]
    assert after["closingBalance"] == "104.00"
    assert stored(account) == {today - timedelta(days=n): 0 for n in (1, 2, 3)}


def test_a_posting_at_the_day_boundary_lands_in_the_next_day_and_never_in_a_stored_one(api, customer, payer):
    last_instant = at(D, 23, 59, 59, 999999)
    with time_machine.travel(last_instant, tick=False) as clock:
        account = funded_account(customer, "100.00")
        auth = customer_token(payer)
        # Read at D's last instant: D is not closed, nothing is stored.
        on_d = statement(api, auth, account, D, D).json()["data"]
        assert [e["bookedAt"] for e in on_d["entries"]] == ["2026-03-09T23:59:59.999999+00:00"]
        assert stored(account) == {}

        clock.move_to(at(D + timedelta(days=1)))
        fund(account, "0.01", "Midnight")
        both = statement(api, auth, account, D, D + timedelta(days=1)).json()["data"]
        # 00:00 UTC of D+1 closes D.
        assert stored(account) == {D: 1}
        assert [e["reference"] for e in both["entries"]] == ["Funding", "Midnight"]

        # A host whose clock is behind books at the account's latest booking
        # time: on D+1, never into the stored D.
        clock.move_to(at(D, 23, 0))
        fund(account, "0.02", "Behind")
        clock.move_to(at(D + timedelta(days=1), 0, 5))
        later = statement(api, auth, account, D, D + timedelta(days=1)).json()["data"]
    assert [e["reference"] for e in later["entries"]] == ["Funding", "Midnight", "Behind"]
    assert later["entries"][-1]["bookedAt"] == "2026-03-10T00:00:00+00:00"
    assert later["closingBalance"] == "100.03"
    assert stored(account) == {D: 1}


def test_another_customers_account_is_not_found_and_nothing_is_stored(api, customer2_auth, customer, account):
    today = datetime.now(UTC).date()
    response = statement(api, customer2_auth, account, today - timedelta(days=5), today)
    assert response.status_code == 404
    assert not StatementDay.objects.filter(account_id=account.id).exists()


def test_a_changed_layout_never_reads_the_old_pieces():
    names = {layout.key for layout in LAYOUTS.values()}
    assert len(names) == 3 and all(len(name) <= 40 for name in names)
    assert JSON_LAYOUT.key.startswith("json-")
    changed = type(JSON_LAYOUT)(
        name="json",
        sql=JSON_LAYOUT.sql,
        python=JSON_LAYOUT.python,
        separator=";",
        escapes=JSON_LAYOUT.escapes,
    )
    assert changed.key != JSON_LAYOUT.key


def test_ledger_check_reports_a_stored_day_the_ledger_no_longer_gives(api, customer, payer):
    with time_machine.travel(at(D, 10), tick=False) as clock:
        account = funded_account(customer, "100.00")
        clock.move_to(at(D + timedelta(days=1), 9))
        fund(account, "1.00")
        statement(api, customer_token(payer), account, D, D, "csv")
    assert ledger_check().ok
    row = StatementDay.objects.get(account_id=account.id, day=D)
    StatementDay.objects.filter(id=row.id).update(entries=5)
    try:
        assert ledger_check().stale_statement_days == [(str(account.id), CSV_LAYOUT.key, D)]
        err = io.StringIO()
        with pytest.raises(CommandError):
            call_command("check_ledger", stdout=io.StringIO(), stderr=err)
        assert (
            f"Account {account.id}: the stored {CSV_LAYOUT.key} statement lines of {D} are stale"
            in err.getvalue()
        )
    finally:
        StatementDay.objects.filter(id=row.id).update(entries=row.entries)


@requires_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_concurrent_first_reads_both_answer_and_store_each_day_once(transactional_db, customer, payer, fmt):
    today = datetime.now(UTC).date()
    with time_machine.travel(at(today - timedelta(days=3), 10), tick=True) as clock:
        account = funded_account(customer, "100.00")
        clock.move_to(at(today - timedelta(days=2), 10))
        fund(account, "3.00", "Second")
    fund(account, "1.00", "Today")
    auth = customer_token(payer)

    def read(_):
        response = APIClient().get(
            f"/v1/customers/{account.customer_id}/accounts/{account.id}/statements",
            {"from": str(today - timedelta(days=5)), "to": str(today), "format": fmt},
            **auth,
        )
        return response.status_code, response.content

    results = run_at_once(4, read)

    assert [status for status, _ in results] == [200] * 4
    assert len({content for _, content in results}) == 1
    assert stored(account, fmt) == {
        today - timedelta(days=5): 0,
        today - timedelta(days=4): 0,
        today - timedelta(days=3): 1,
        today - timedelta(days=2): 1,
        today - timedelta(days=1): 0,
    }


def test_the_periodic_run_stores_yesterday_of_the_accounts_that_booked_since(customer):
    with time_machine.travel(at(D - timedelta(days=3), 10), tick=False) as clock:
        active = funded_account(customer, "100.00")
        quiet = funded_account(customer, "100.00")
        # Days stored up to D-3's eve by a statement: the run fills from D-2.
        statement_read(
            Account.objects.get(id=active.id), D - timedelta(days=5), D - timedelta(days=4), CSV_LAYOUT
        )
        clock.move_to(at(D - timedelta(days=1), 10))
        fund(active, "1.00")
        fund(quiet, "1.00")
        clock.move_to(at(D, 9))
        fund(active, "2.00")

        # (Other tests' accounts, booked at the real time, are ahead of the clock here.)
        assert statement_days_store(D) >= 3
        # Nothing left to store until the next day: a second run stores nothing.
        assert statement_days_store(D) == 0

    assert stored(active, "json") == stored(active, "camt053") == {D - timedelta(days=1): 1}
    assert stored(active, "csv") == {
        D - timedelta(days=5): 0,
        D - timedelta(days=4): 0,
        D - timedelta(days=3): 1,
        D - timedelta(days=2): 0,
        D - timedelta(days=1): 1,
    }
    # The quiet account booked nothing since D-1: that day is still open.
    assert not StatementDay.objects.filter(account_id=quiet.id).exists()


def test_the_periodic_run_is_on_the_beat_schedule():
    entry = settings.CELERY_BEAT_SCHEDULE["store-statement-days"]
    assert entry["task"] == store_statement_days.name == "payments.tasks.store_statement_days"
