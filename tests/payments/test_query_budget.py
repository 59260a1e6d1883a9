"""What creating a payment costs the database, counted statement by statement.

Every statement is a round trip to PostgreSQL, and under load each one waits for
the database: the count is the cost that grows with traffic, so a change that
adds one fails here. Counted with the route committing as it does in production
(no test transaction around it: inside one, the one-statement acceptance would
run under a savepoint that production does not send).

On PostgreSQL an accepted payment costs 2: the caller with its account and
beneficiary (one SELECT), and one statement that writes the whole acceptance
(the debit, the ledger movement and its postings, the request, its event and
the Idempotency-Key's record with its answer), atomic on its own, so no BEGIN
or COMMIT; the same with prepared statements on (DATABASE_PREPARED_STATEMENTS),
where that statement is sent with its values bound on the server. SQLite keeps
the claim and a transaction of separate statements: 10.
"""

import uuid
from decimal import Decimal

from django.db import connection
from django.test.utils import CaptureQueriesContext

from bankapi.models import IdempotencyRecord
from config.celery import app as celery_app
from payments.models import PaymentRequest
from tests.payments.conftest import payments_url

BUDGET = 2 if connection.vendor == "postgresql" else 10


def _pay(api, account, beneficiary, auth, amount="10.00"):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Invoice 42", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def _sent(queries: list[str]) -> list[str]:
    """The statements that reach the database: without a BEGIN and COMMIT with
    nothing between them (a check that no transaction is open runs an empty
    block, and psycopg sends neither line of one)."""
    sent: list[str] = []
    for sql in queries:
        if sql == "COMMIT" and sent and sent[-1] == "BEGIN":
            sent.pop()
        else:
            sent.append(sql)
    return sent


def test_creating_a_payment_stays_within_its_statement_budget(
    transactional_db, api, account, beneficiary, customer_auth
):
    # As deployed with a broker: the event waits in the outbox for a worker's
    # relay instead of being fanned out in this process after the commit.
    celery_app.conf.task_always_eager = False  # put back by the suite's _celery_eager fixture
    # A process that has paid once already knows its system accounts (they are
    # remembered once committed).
    assert _pay(api, account, beneficiary, customer_auth).status_code == 200

    with CaptureQueriesContext(connection) as captured:
        response = _pay(api, account, beneficiary, customer_auth, amount="12.34")

    statements = _sent([query["sql"] for query in captured.captured_queries])
    assert len(statements) <= BUDGET, "\n\n".join(statements)
    assert response.status_code == 200
    request_id = response.json()["data"]["bankTransfer"]["requestId"]
    assert PaymentRequest.objects.get(id=request_id).amount == Decimal("12.34")
    record = IdempotencyRecord.objects.get(key=response.request["HTTP_IDEMPOTENCY_KEY"])
    assert record.state == IdempotencyRecord.State.COMPLETED
