"""What creating a payment costs the database, counted statement by statement.

Every statement is a round trip to PostgreSQL, and under load each one waits for
the database: the count is the cost that grows with traffic, so a change that
adds one fails here. Counted in the test transaction, where each transaction the
route opens shows as SAVEPOINT and RELEASE SAVEPOINT: the same number of
statements as its BEGIN and COMMIT in production.

On PostgreSQL an accepted payment costs 3: the caller with its account and
beneficiary (one SELECT), the Idempotency-Key claim (autocommitted), and one
statement that writes the whole acceptance (the debit, the ledger movement and
its postings, the request, its event and the claim's completion), atomic on its
own, so no BEGIN or COMMIT. SQLite keeps the transaction of separate statements: 10.
"""

import uuid
from decimal import Decimal

from django.db import connection

from bankapi.models import IdempotencyRecord
from payments.models import PaymentRequest
from tests.payments.conftest import payments_url

BUDGET = 3 if connection.vendor == "postgresql" else 10


def _pay(api, account, beneficiary, auth, amount="10.00"):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Invoice 42", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def test_creating_a_payment_stays_within_its_statement_budget(
    api,
    account,
    beneficiary,
    customer_auth,
    django_assert_max_num_queries,
    django_capture_on_commit_callbacks,
):
    # A process that has paid once already knows its system accounts (they are
    # remembered once committed).
    with django_capture_on_commit_callbacks(execute=True):
        assert _pay(api, account, beneficiary, customer_auth).status_code == 200

    with django_assert_max_num_queries(BUDGET):
        response = _pay(api, account, beneficiary, customer_auth, amount="12.34")

    assert response.status_code == 200
    request_id = response.json()["data"]["bankTransfer"]["requestId"]
    assert PaymentRequest.objects.get(id=request_id).amount == Decimal("12.34")
    record = IdempotencyRecord.objects.get(key=response.request["HTTP_IDEMPOTENCY_KEY"])
    assert record.state == IdempotencyRecord.State.COMPLETED
