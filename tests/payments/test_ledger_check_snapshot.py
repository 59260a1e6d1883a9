"""The ledger check reads one snapshot: a movement committed while it runs is in
every part of it or in none, so a live ledger is not reported broken. And being
one transaction, its streamed reads stay on one server connection (PgBouncer in
transaction pooling would otherwise send a cursor's later fetches elsewhere)."""

import threading
import uuid
from decimal import Decimal

import pytest
from django.db import connection

from payments.ledger import ledger_check, ledger_fund_account
from tests.conftest import requires_postgres
from tests.support.factories import funded_account


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_funding_committed_between_its_reads_is_not_a_mismatch(customer):
    account = funded_account(customer, "100.00")
    booked = []

    def fund() -> None:
        ledger_fund_account(account, Decimal("7.00"), key=f"test:{uuid.uuid4()}", memo="Meanwhile")
        connection.close()

    def after_the_sums_of_postings_a_funding_commits(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not booked and "GROUP BY" in sql and '"account_id"' in sql:
            # Another request books and commits between the sums of postings
            # and the read of the accounts' balances.
            done = threading.Thread(target=fund)
            done.start()
            done.join()
            booked.append(True)
        return result

    with connection.execute_wrapper(after_the_sums_of_postings_a_funding_commits):
        report = ledger_check()

    assert booked, "the funding should have been booked while the check ran"
    assert report.ok, report
    account.refresh_from_db()
    assert account.balance == Decimal("107.00")
    assert ledger_check().ok
