"""A statement is read from one snapshot of the ledger: a posting committed while
it is being read is in all of it (its line and the closing balance) or in none,
so its opening balance, entries and closing balance always reconcile."""

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection

from payments.ledger import ledger_fund_account
from payments.selectors import ledger as ledger_reads
from tests.conftest import requires_postgres
from tests.payments.test_statements import customer_token, statement
from tests.support.factories import funded_account

# "Today" is read more than once: a run across midnight must read one day.
pytestmark = pytest.mark.usefixtures("clear_of_midnight")


def reconciles(data: dict) -> bool:
    total = Decimal(data["openingBalance"])
    for entry in data["entries"]:
        amount = Decimal(entry["amount"])
        total += amount if entry["creditDebit"] == "CRDT" else -amount
    return total == Decimal(data["closingBalance"])


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_posting_committed_during_the_read_is_all_in_or_all_out(api, customer, payer, monkeypatch):
    account = funded_account(customer, "100.00")
    auth = customer_token(payer)
    balances = ledger_reads._balances

    def balances_then_a_funding_commits(*args):
        found = balances(*args)
        # Another request books and commits between the statement's reads.
        done = threading.Thread(
            target=lambda: (
                ledger_fund_account(account, Decimal("7.00"), key=f"test:{uuid.uuid4()}", memo="Meanwhile"),
                connection.close(),
            )
        )
        done.start()
        done.join()
        return found

    monkeypatch.setattr(ledger_reads, "_balances", balances_then_a_funding_commits)
    today = datetime.now(UTC).date()

    response = statement(api, auth, account, today - timedelta(days=1), today, "json")

    assert response.status_code == 200
    data = json.loads(response.content)["data"]
    assert reconciles(data), data
    # The funding did commit: the next statement has it, and still reconciles.
    monkeypatch.setattr(ledger_reads, "_balances", balances)
    after = json.loads(statement(api, auth, account, today - timedelta(days=1), today, "json").content)[
        "data"
    ]
    assert reconciles(after)
    assert len(after["entries"]) == len(data["entries"]) + 1
    assert (after["entries"][-1]["amount"], after["entries"][-1]["creditDebit"]) == ("7.00", "CRDT")
