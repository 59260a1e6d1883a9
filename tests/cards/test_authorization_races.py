"""Of a clear and a reverse of one authorization racing, one wins: the money
moves once and the other answers 409 (PostgreSQL, real threads)."""

import pytest
from rest_framework.test import APIClient

from bankapi.models import Account
from cards.models import CardAuthorization
from payments.models import StatementEntry
from tests.cards.test_authorizations import act, authorize
from tests.conftest import requires_postgres
from tests.support.race import run_at_once


@requires_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("rounds", [3])
def test_a_clear_and_a_reverse_racing_one_wins(consumer, rounds):
    headers = consumer.auth
    for _ in range(rounds):
        authorization_id = authorize(APIClient(), headers, consumer.card_id).json()["data"]["authorizationId"]

        def race(index: int, authorization_id: str = authorization_id) -> int:
            action = "clear" if index % 2 == 0 else "reverse"
            return act(APIClient(), headers, authorization_id, action).status_code

        statuses = run_at_once(4, race)

        assert sorted(statuses) == [200, 409, 409, 409]
        row = CardAuthorization.objects.get(id=authorization_id)
        assert row.status in ("CLEARED", "REVERSED")
        assert StatementEntry.objects.filter(card_authorization_id=authorization_id).count() == (
            1 if row.status == "CLEARED" else 0
        )
    account = Account.objects.get(id=consumer.account_id)
    cleared = CardAuthorization.objects.filter(status="CLEARED").count()
    assert account.held == 0
    assert account.balance == 100000 - 40 * cleared
    assert account.outbound_total == 40 * cleared
