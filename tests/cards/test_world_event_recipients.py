"""Who receives the sandbox world's money-in and card events. An incoming payment's
event is the account's customer's and its custodian's; a card authorization's
events are the card's customer's only (not its custodian's); management sees
every one of its program's, in the events list and on its webhook endpoints;
another customer, and another program, see none."""

import pytest

from bankapi.models import Account, Customer
from cards.services import card_issue
from events.endpoints import endpoint_create
from tests.support.factories import custodian_with_clients, customer_user, management_user
from tests.support.factories_cards import card_customer, card_program
from tests.support.receiver import start_receiver

IBAN = "GB33BUKB20201555555555"
INCOMING = "incoming_payment.received"
CARD_TYPES = ["card_authorization.created", "card_authorization.cleared", "card_authorization.reversed"]


@pytest.fixture
def receivers():
    made = []

    def start():
        receiver, server = start_receiver(None)
        made.append(server)
        return receiver

    yield start
    for server in made:
        server.shutdown()


def event_ids(api, auth: dict[str, str], query: str = "") -> dict[str, str]:
    """The caller's events of the world's types, as {eventId: type}."""
    answer = api.get(f"/v1/events?limit=100{query}", **auth)
    assert answer.status_code == 200, answer.content
    return {
        event["eventId"]: event["type"]
        for event in answer.json()["data"]["events"]
        if event["type"] in (INCOMING, *CARD_TYPES)
    }


def test_each_world_event_reaches_its_owners_and_nobody_else(
    api, db, receivers, django_capture_on_commit_callbacks
):
    # given a program with a custodian's client (a user of its own, a card on its
    # account), another customer of the program, and another program; webhook
    # endpoints of both programs subscribed to every world event
    program, other_program = card_program(), card_program()
    setup = custodian_with_clients(program, clients=1)
    account = setup.accounts[0]
    Account.objects.filter(id=account.id).update(iban=IBAN)
    client = customer_user(program, customer=Customer.objects.get(id=account.customer_id))
    card = card_issue(account=account, name_on_card="CUSTODIAN CLIENT")
    outsider = card_customer(program, "Charles Babbage")
    management = management_user().id
    ours, theirs = receivers(), receivers()
    for hook, owner in ((ours, program), (theirs, other_program)):
        endpoint_create(program_id=owner.id, sandbox=True, url=hook.url, event_types=[INCOMING, *CARD_TYPES])
    query = f"?programId={program.id}"

    # when money comes in, one authorization clears and another is reversed
    with django_capture_on_commit_callbacks(execute=True):
        incoming = api.post(
            f"/v1/sandbox/incoming-payments{query}",
            {"creditorIban": IBAN, "amount": "25.00", "currency": "GBP", "debtorName": "Acme Ltd"},
            format="json",
            **management,
        )
        assert incoming.status_code == 200, incoming.content
        spend = {"amount": "10.00", "currency": "GBP", "merchantName": "Corner Shop"}
        authorizations = [
            api.post(f"/v1/sandbox/cards/{card.id}/authorizations{query}", spend, format="json", **management)
            for _ in range(2)
        ]
        assert [a.json()["data"]["status"] for a in authorizations] == ["PENDING", "PENDING"]
        first, second = (a.json()["data"]["authorizationId"] for a in authorizations)
        cleared = api.post(
            f"/v1/sandbox/card-authorizations/{first}/clear{query}", {}, format="json", **management
        )
        reversed_ = api.post(f"/v1/sandbox/card-authorizations/{second}/reverse{query}", **management)
        assert (cleared.status_code, reversed_.status_code) == (200, 200), (
            cleared.content,
            reversed_.content,
        )

    # then the program's management sees all six, and its endpoint got each once
    everything = event_ids(api, management, f"&programId={program.id}")
    assert sorted(everything.values()) == sorted([INCOMING, *CARD_TYPES, "card_authorization.created"])
    delivered = [item.headers["webhook-id"] for item in ours.received]
    assert sorted(delivered) == sorted(everything)
    # the account's customer sees all six (its money in and its card's spending)
    assert event_ids(api, client.access) == everything
    # its custodian sees the incoming payment only: card spending is the card's customer's
    assert sorted(event_ids(api, setup.person.access).values()) == [INCOMING]
    # another customer of the program, and another program, see none of them
    assert event_ids(api, outsider.auth) == {}
    assert event_ids(api, management, f"&programId={other_program.id}") == {}
    assert theirs.received == []
    # nor can they reach one by its id: a card event is 404 to the custodian, any to the outsider
    card_event = next(event for event, type_ in everything.items() if type_ != INCOMING)
    for stranger, event in ((setup.person.access, card_event), (outsider.auth, next(iter(everything)))):
        redeliver = api.post(f"/v1/events/{event}/redeliver", **stranger)
        assert redeliver.status_code == 404, redeliver.content
