"""What an approved card authorization costs the database, counted statement by
statement, as a payment's is (`tests/payments/test_query_budget.py`).

On PostgreSQL an approved authorization costs 2, as a payment does: the card
with its account and program (one SELECT), and one statement that writes the
whole approval (the account's `held` and day's count under the decision's
funds and limit conditions, the hold, the authorization, its event and the
Idempotency-Key's record with its answer), atomic on its own. Counted with the
route committing as in production (no test transaction around it). A
management caller reads the program it names and then the card on their own
(the read a customer's token makes in one statement): 4.
"""

import uuid
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bankapi.models import Account, IdempotencyRecord
from cards.models import CardAuthorization
from config.celery import app as celery_app
from payments.models import Hold
from tests.cards.test_authorizations import authorize
from tests.conftest import requires_postgres
from tests.payments.test_query_budget import _sent

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(("caller", "budget"), [("customer", 2), ("management", 4)])
def test_an_approved_authorization_is_one_read_and_one_write(api, consumer, management, caller, budget):
    celery_app.conf.task_always_eager = False  # put back by the suite's _celery_eager fixture
    who, program_id = (consumer.auth, None) if caller == "customer" else (management.id, consumer.program_id)
    # A process that has authorized once already knows what it keeps (tokens, clocks).
    assert authorize(api, who, consumer.card_id, program_id=program_id).status_code == 200
    key = str(uuid.uuid4())

    with CaptureQueriesContext(connection) as captured:
        response = authorize(api, who, consumer.card_id, program_id=program_id, key=key, amount="12.34")

    statements = _sent([query["sql"] for query in captured.captured_queries])
    assert len(statements) <= budget, "\n\n".join(statements)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["status"] == "PENDING"
    authorization = CardAuthorization.objects.get(id=data["authorizationId"])
    assert Hold.objects.get(id=authorization.hold_id).amount == Decimal("12.34")
    account = Account.objects.get(id=consumer.account_id)
    assert (account.held, account.outbound_total) == (Decimal("52.34"), Decimal("52.34"))
    record = IdempotencyRecord.objects.get(key=key)
    assert record.state == IdempotencyRecord.State.COMPLETED
    assert bytes(record.response_body) == response.content
