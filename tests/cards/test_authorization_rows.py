"""Both ways an authorization is approved write the same rows, not just the same
answer: the route's one statement (PostgreSQL, `cards.authorizations_at_once`)
and the transactional service it falls back to (`card_authorize`, the card and
the account locked). From accounts in the same state, every row the approval
wrote is read back (the hold, the authorization, its event, the account's
ledger fields) with the ids and times that are each way's own replaced by
names, and the two must be equal. Refusals of the one statement (funds, the
day's limit, a frozen card) are decided by the service and answered as
declines, writing what a decline writes.
"""

import uuid
from datetime import datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from bankapi.models import Account, Program
from cards.authorizations import AuthorizationOrder, card_authorize
from cards.models import Card, CardAuthorization
from cards.services import card_issue
from events.models import Event
from payments.ledger import ledger_check
from payments.models import Hold, LedgerPosting
from tests.cards.test_authorizations import authorize
from tests.conftest import requires_postgres
from tests.payments.test_acceptance_rows import LEDGER_FIELDS, _row
from tests.support.factories import funded_account, uk_account

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


def _card(consumer, balance: str) -> Card:
    customer = Account.objects.get(id=consumer.account_id).customer
    return card_issue(account=funded_account(customer, balance, **uk_account()), name_on_card="ADA")


def _by_route(api, consumer, card: Card, amount: str) -> uuid.UUID:
    response = authorize(api, consumer.auth, str(card.id), key=str(uuid.uuid4()), amount=amount)
    assert response.status_code == 200, response.content
    return uuid.UUID(response.json()["data"]["authorizationId"])


def _by_service(card: Card, amount: str) -> uuid.UUID:
    card = Card.objects.select_related("account", "program").get(id=card.id)
    order = AuthorizationOrder(amount=Decimal(amount), currency="GBP", merchant_name="Corner Coffee")
    return card_authorize(card=card, order=order).id


def _written(authorization_id: uuid.UUID, card: Card, since: datetime) -> dict:
    row = CardAuthorization.objects.filter(id=authorization_id).values().get()
    names = {
        str(authorization_id): "AUTHORIZATION",
        str(card.id): "CARD",
        str(card.account_id): "ACCOUNT",
        row["authorized_at"].isoformat().replace("+00:00", "Z"): "AUTHORIZED_AT",
    }
    if row["expires_at"] is not None:
        names[row["expires_at"].isoformat().replace("+00:00", "Z")] = "EXPIRES_AT"
    holds = Hold.objects.filter(account_id=card.account_id).values()
    if row["hold_id"] is not None:
        names[str(row["hold_id"])] = "HOLD"
        assert [hold["placed_at"] for hold in holds] == [row["authorized_at"]]
    events = Event.objects.filter(resource_id=str(authorization_id)).values()
    return {
        "authorization": _row({**row, "authorized_at": None, "expires_at": None}, names, since),
        "expires after": (row["expires_at"] - row["authorized_at"]) if row["expires_at"] else None,
        "holds": [_row({**hold, "placed_at": None}, names, since) for hold in holds],
        "events": [_row(event, names, since) for event in events],
        "account": Account.objects.filter(id=card.account_id).values(*LEDGER_FIELDS).get(),
        "postings": LedgerPosting.objects.filter(account_id=card.account_id, created_at__gte=since).count(),
    }


CASES = [
    # (case, balance, amount, program settings, status)
    ("approved", "10000.00", "12.34", {}, "PENDING"),
    ("approved to the last cent available", "12.34", "12.34", {}, "PENDING"),
    ("short of funds", "12.33", "12.34", {}, "DECLINED"),
    ("past the day's limit", "10000.00", "12.34", {"daily_outbound_limit": Decimal("12.33")}, "DECLINED"),
    ("above the per-payment limit", "10000.00", "12.34", {"per_payment_limit": Decimal("12.33")}, "DECLINED"),
]


@pytest.mark.parametrize(
    ("case", "balance", "amount", "settings", "status"), CASES, ids=[c[0] for c in CASES]
)
def test_the_route_and_the_service_write_the_same_rows(
    api, consumer, case, balance, amount, settings, status
):
    Program.objects.filter(id=consumer.program_id).update(**settings)
    doors = {
        "route": lambda card: _by_route(api, consumer, card, amount),
        "service": lambda card: _by_service(card, amount),
    }
    written = {}
    for door, authorize_with in doors.items():
        card = _card(consumer, balance)
        since = timezone.now()
        authorization_id = authorize_with(card)
        written[door] = _written(authorization_id, card, since)
        assert CardAuthorization.objects.get(id=authorization_id).status == status, door
    assert written["route"] == written["service"], case
    assert ledger_check().ok


def test_a_card_frozen_after_it_was_read_is_declined_and_holds_nothing(api, consumer, monkeypatch):
    """The one statement re-reads the card under a share lock: a freeze that
    lands between the caller's read and the write refuses it, and the locked
    decision declines it CARD_INACTIVE."""
    import cards.authorizations_at_once as at_once

    real = at_once.authorization_plan

    def frozen_meanwhile(*args, **kwargs):
        Card.objects.filter(id=consumer.card_id).update(status=Card.Status.FROZEN)
        return real(*args, **kwargs)

    monkeypatch.setattr(at_once, "authorization_plan", frozen_meanwhile)
    response = authorize(api, consumer.auth, consumer.card_id, key=str(uuid.uuid4()))
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert (data["status"], data["declineReason"]) == ("DECLINED", "CARD_INACTIVE")
    account = Account.objects.get(id=consumer.account_id)
    assert (account.held, account.outbound_total) == (0, 0)
    assert not Hold.objects.filter(account_id=consumer.account_id).exists()
