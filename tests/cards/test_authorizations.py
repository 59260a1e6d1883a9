"""Card spending in the sandbox: the network's authorizations decided by the
card's rules and the payment rules, held, cleared (in full or in part),
reversed, expired; freezing a card; the card's lists; over HTTP."""

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
import xmlschema
from django.utils import timezone

from authn.tokens import tokens_issue
from bankapi.models import Account, Program
from cards.authorizations import authorizations_expire
from cards.models import Card, CardAuthorization
from events.models import Event
from payments.ledger import ledger_check
from payments.models import Hold, LedgerPosting, StatementEntry
from payments.statement_formats import CAMT053_XSD
from tests.cards.conftest import assert_error
from tests.support.factories_cards import CardCustomer, card_customer, card_program


def authorize(api, who: dict, card_id: str, program_id=None, key=None, **fields):
    body = {"amount": "40.00", "currency": "GBP", "merchantName": "Corner Coffee", **fields}
    query = f"?programId={program_id}" if program_id else ""
    headers = dict(who)
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return api.post(f"/v1/sandbox/cards/{card_id}/authorizations{query}", body, format="json", **headers)


def act(api, who: dict, authorization_id: str, action: str, body=None, key=None, program_id=None):
    headers = dict(who)
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    query = f"?programId={program_id}" if program_id else ""
    url = f"/v1/sandbox/card-authorizations/{authorization_id}/{action}{query}"
    return api.post(url, body or {}, format="json", **headers)


def figures(api, ada: CardCustomer) -> tuple[str, str, str]:
    """(balance, available, today's used) as the account's routes answer them."""
    balances = api.get(ada.account_url("balances"), **ada.auth).json()["data"]
    limits = api.get(ada.account_url("limits"), **ada.auth).json()["data"]
    return balances["balance"], balances["available"], limits["daily"]["used"]


@pytest.fixture
def ada(consumer) -> CardCustomer:
    return consumer


def test_an_approved_authorization_holds_its_amount(api, ada):
    answer = authorize(api, ada.auth, ada.card_id, merchantCategoryCode="5814")
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["status"] == "PENDING" and data["declineReason"] is None and data["clearedAmount"] is None
    assert (data["cardId"], data["accountId"], data["amount"], data["currency"]) == (
        ada.card_id,
        ada.account_id,
        "40.00",
        "GBP",
    )
    assert (data["merchantName"], data["merchantCategoryCode"]) == ("Corner Coffee", "5814")
    created = timezone.datetime.fromisoformat(data["createdAt"].replace("Z", "+00:00"))
    assert data["expiresAt"].endswith("Z")
    assert timezone.datetime.fromisoformat(data["expiresAt"].replace("Z", "+00:00")) - created == timedelta(
        days=7
    )
    # available falls, the balance does not; counted on today's used at once; no statement entry
    assert figures(api, ada) == ("100000.00", "99960.00", "40.00")
    assert not StatementEntry.objects.filter(card_authorization_id__isnull=False).exists()
    assert LedgerPosting.objects.filter(account_id=ada.account_id).count() == 1
    event = Event.objects.get(type="card_authorization.created")
    assert event.data == data and str(event.customer_id) == ada.customer_id
    listed = api.get(ada.card_url("/authorizations"), **ada.auth).json()["data"]
    assert listed == {"authorizations": [data], "nextToken": None}
    detail = api.get(ada.card_url(f"/authorizations/{data['authorizationId']}"), **ada.auth).json()["data"]
    assert detail == data


def test_management_authorizes_with_its_id_token_and_program(api, ada, management):
    answer = authorize(api, management.id, ada.card_id, program_id=ada.program_id)
    assert answer.status_code == 200 and answer.json()["data"]["status"] == "PENDING"


def _declined(api, ada, **fields) -> str:
    answer = authorize(api, ada.auth, ada.card_id, **fields)
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["status"] == "DECLINED" and data["expiresAt"] is None and data["clearedAmount"] is None
    return data["declineReason"]


def test_each_decline_reason_in_the_order_the_rules_are_checked(api, ada, management):
    program = Program.objects.get(id=ada.program_id)
    program.per_payment_limit = Decimal("1000.00")
    program.daily_outbound_limit = Decimal("1500.00")
    program.save()
    unfreeze = f"/v1/sandbox/cards/{ada.card_id}/unfreeze"
    freeze = f"/v1/sandbox/cards/{ada.card_id}/freeze"
    # every rule broken at once: the card's own rule answers first
    api.post(freeze, {}, format="json", **ada.auth)
    assert _declined(api, ada, currency="EUR", amount="100000.01") == "CARD_INACTIVE"
    api.post(unfreeze, {}, format="json", **ada.auth)
    # then the currency (an ISO code the account does not hold, even one with other minor units)
    assert _declined(api, ada, currency="EUR", amount="100000.01") == "CURRENCY_NOT_SUPPORTED"
    assert _declined(api, ada, currency="JPY") == "CURRENCY_NOT_SUPPORTED"
    # then the per-payment limit, before the funds
    assert _declined(api, ada, amount="100000.01") == "LIMIT_EXCEEDED"
    assert _declined(api, ada, amount="1000.01") == "LIMIT_EXCEEDED"
    # the day's limit: 1000 + 500 fit, one cent more does not
    assert authorize(api, ada.auth, ada.card_id, amount="1000.00").json()["data"]["status"] == "PENDING"
    assert authorize(api, ada.auth, ada.card_id, amount="500.00").json()["data"]["status"] == "PENDING"
    assert _declined(api, ada, amount="0.01") == "LIMIT_EXCEEDED"
    # then the available balance
    program.daily_outbound_limit = Decimal("10000000.00")
    program.per_payment_limit = Decimal("10000000.00")
    program.save()
    assert _declined(api, ada, amount="98500.01") == "INSUFFICIENT_FUNDS"
    assert authorize(api, ada.auth, ada.card_id, amount="98500.00").json()["data"]["status"] == "PENDING"
    # declines held and counted nothing
    assert figures(api, ada) == ("100000.00", "0.00", "100000.00")
    assert Hold.objects.filter(account_id=ada.account_id, released_at__isnull=True).count() == 3
    reasons = list(
        CardAuthorization.objects.filter(status="DECLINED")
        .order_by("authorized_at")
        .values_list("decline_reason", flat=True)
    )
    assert reasons == [
        "CARD_INACTIVE",
        "CURRENCY_NOT_SUPPORTED",
        "CURRENCY_NOT_SUPPORTED",
        "LIMIT_EXCEEDED",
        "LIMIT_EXCEEDED",
        "LIMIT_EXCEEDED",
        "INSUFFICIENT_FUNDS",
    ]


def test_a_full_clearing_is_one_debit_paid_from_the_hold(api, ada):
    authorization = authorize(api, ada.auth, ada.card_id).json()["data"]
    answer = act(api, ada.auth, authorization["authorizationId"], "clear")
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert (data["status"], data["clearedAmount"]) == ("CLEARED", "40.00")
    assert figures(api, ada) == ("99960.00", "99960.00", "40.00")
    debit = api.get(ada.account_url("transactions"), **ada.auth).json()["data"]["transactions"][0]
    assert (debit["direction"], debit["amount"], debit["reference"]) == ("DEBIT", "40.00", "Corner Coffee")
    assert debit["cardAuthorizationId"] == data["authorizationId"] and debit["incomingPaymentId"] is None
    assert Event.objects.filter(type="card_authorization.cleared").get().data == data


def test_a_partial_clearing_gives_the_rest_back_to_available_and_to_its_day(api, ada):
    authorization = authorize(api, ada.auth, ada.card_id, amount="50.00").json()["data"]
    assert figures(api, ada) == ("100000.00", "99950.00", "50.00")
    data = act(api, ada.auth, authorization["authorizationId"], "clear", {"amount": "30.25"}).json()["data"]
    assert (data["status"], data["clearedAmount"], data["amount"]) == ("CLEARED", "30.25", "50.00")
    assert figures(api, ada) == ("99969.75", "99969.75", "30.25")
    today = data["createdAt"][:10]
    statement = api.get(ada.account_url(f"statements?from={today}&to={today}"), **ada.auth).json()["data"]
    entry = statement["entries"][-1]
    assert (entry["creditDebit"], entry["amount"], entry["reference"], entry["endToEndId"]) == (
        "DBIT",
        "30.25",
        "Corner Coffee",
        None,
    )
    assert entry["description"] == "Card payment" and statement["closingBalance"] == "99969.75"
    camt = api.get(ada.account_url(f"statements?from={today}&to={today}&format=camt053"), **ada.auth)
    xmlschema.XMLSchema(str(CAMT053_XSD)).validate(camt.content.decode())
    assert (
        "<EndToEndId>NOTPROVIDED</EndToEndId></Refs><RltdPties><Cdtr><Pty><Nm>Corner Coffee</Nm></Pty></Cdtr>"
        "</RltdPties><RmtInf><Ustrd>Corner Coffee</Ustrd></RmtInf>"
    ) in camt.content.decode()


def test_more_than_authorized_is_400_and_nothing_changes(api, ada):
    authorization = authorize(api, ada.auth, ada.card_id).json()["data"]
    answer = act(api, ada.auth, authorization["authorizationId"], "clear", {"amount": "40.01"})
    body = assert_error(answer, 400, "VALIDATION_ERROR")
    assert body["errors"][0]["field"] == "amount"
    for bad in ({"amount": "0"}, {"amount": 1}, {"amount": "1.001"}, {"other": "x"}):
        assert act(api, ada.auth, authorization["authorizationId"], "clear", bad).status_code == 400
    assert CardAuthorization.objects.get(id=authorization["authorizationId"]).status == "PENDING"
    assert figures(api, ada) == ("100000.00", "99960.00", "40.00")


def test_a_reversal_releases_the_hold_and_gives_back_the_day(api, ada):
    authorization = authorize(api, ada.auth, ada.card_id).json()["data"]
    data = act(api, ada.auth, authorization["authorizationId"], "reverse").json()["data"]
    assert data["status"] == "REVERSED" and data["clearedAmount"] is None
    assert figures(api, ada) == ("100000.00", "100000.00", "0.00")
    assert Event.objects.filter(type="card_authorization.reversed").get().data == data
    assert not StatementEntry.objects.filter(card_authorization_id__isnull=False).exists()


def test_only_a_pending_authorization_clears_or_reverses(api, ada):
    cleared = authorize(api, ada.auth, ada.card_id).json()["data"]["authorizationId"]
    act(api, ada.auth, cleared, "clear")
    reversed_ = authorize(api, ada.auth, ada.card_id).json()["data"]["authorizationId"]
    act(api, ada.auth, reversed_, "reverse")
    declined = authorize(api, ada.auth, ada.card_id, currency="EUR").json()["data"]["authorizationId"]
    for authorization_id in (cleared, reversed_, declined):
        for action in ("clear", "reverse"):
            assert_error(act(api, ada.auth, authorization_id, action), 409, "INVALID_STATE")
    assert figures(api, ada) == ("99960.00", "99960.00", "40.00")


def _days_later(monkeypatch, days: int) -> None:
    later = timezone.now() + timedelta(days=days)
    for module in ("cards.authorizations", "cards.serializers_authorizations"):
        monkeypatch.setattr(f"{module}.customer_now", lambda customer_id: later)


def test_an_authorization_expires_after_seven_days(api, ada, monkeypatch):
    authorization = authorize(api, ada.auth, ada.card_id).json()["data"]
    authorization_id = authorization["authorizationId"]
    assert authorizations_expire(timezone.now() + timedelta(days=6), None) == 0
    # past its expiry it reads EXPIRED at once, before any sweep, and neither clears nor reverses
    _days_later(monkeypatch, 8)
    assert api.get(ada.card_url(f"/authorizations/{authorization_id}"), **ada.auth).json()["data"][
        "status"
    ] == ("EXPIRED")
    listed = api.get(ada.card_url("/authorizations?status=EXPIRED"), **ada.auth).json()["data"]
    assert [a["authorizationId"] for a in listed["authorizations"]] == [authorization_id]
    assert (
        api.get(ada.card_url("/authorizations?status=PENDING"), **ada.auth).json()["data"]["authorizations"]
        == []
    )
    assert_error(act(api, ada.auth, authorization_id, "clear"), 409, "INVALID_STATE")
    # a clock's sweep leaves customers who are not that clock's
    assert authorizations_expire(timezone.now() + timedelta(days=7, seconds=1), uuid.uuid4()) == 0
    # the real sweep marks it, releases the hold and gives back its day's used
    assert authorizations_expire(timezone.now() + timedelta(days=7, seconds=1), None) == 1
    assert authorizations_expire(timezone.now() + timedelta(days=7, seconds=1), None) == 0
    row = CardAuthorization.objects.get(id=authorization_id)
    assert row.status == "EXPIRED" and row.hold is not None and row.hold.released_at is not None
    assert Account.objects.get(id=ada.account_id).held == 0
    assert Account.objects.get(id=ada.account_id).outbound_total == 0
    event = Event.objects.get(type="card_authorization.expired")
    assert event.data["status"] == "EXPIRED" and event.data["authorizationId"] == authorization_id
    assert ledger_check().ok


def test_freeze_and_unfreeze(api, ada, management):
    frozen = api.post(f"/v1/sandbox/cards/{ada.card_id}/freeze", {}, format="json", **ada.auth)
    assert frozen.status_code == 200, frozen.content
    card = Card.objects.get(id=ada.card_id)
    assert frozen.json()["data"] == {
        "cardId": ada.card_id,
        "accountId": ada.account_id,
        "status": "FROZEN",
        "lastFour": card.last_four,
        "expiryMonth": card.expiry_month,
        "expiryYear": card.expiry_year,
        "nameOnCard": card.name_on_card,
    }
    again = api.post(
        f"/v1/sandbox/cards/{ada.card_id}/freeze?programId={ada.program_id}",
        {},
        format="json",
        **management.id,
    )
    assert again.status_code == 200 and again.json()["data"]["status"] == "FROZEN"
    active = api.post(f"/v1/sandbox/cards/{ada.card_id}/unfreeze", {}, format="json", **ada.auth)
    assert active.json()["data"]["status"] == "ACTIVE"
    Card.objects.filter(id=ada.card_id).update(status=Card.Status.CANCELLED)
    for action in ("freeze", "unfreeze"):
        assert_error(
            api.post(f"/v1/sandbox/cards/{ada.card_id}/{action}", {}, format="json", **ada.auth),
            409,
            "INVALID_STATE",
        )


def test_a_replay_moves_money_once(api, ada):
    key = str(uuid.uuid4())
    first = authorize(api, ada.auth, ada.card_id, key=key)
    again = authorize(api, ada.auth, ada.card_id, key=key)
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert CardAuthorization.objects.count() == 1
    assert_error(
        authorize(api, ada.auth, ada.card_id, key=key, amount="1.00"), 400, "IDEMPOTENCY_KEY_MISMATCH"
    )
    authorization_id = first.json()["data"]["authorizationId"]
    clear_key = str(uuid.uuid4())
    cleared = act(api, ada.auth, authorization_id, "clear", {"amount": "10.00"}, key=clear_key)
    replayed = act(api, ada.auth, authorization_id, "clear", {"amount": "10.00"}, key=clear_key)
    assert replayed.status_code == 200 and replayed.content == cleared.content
    assert figures(api, ada) == ("99990.00", "99990.00", "10.00")
    assert StatementEntry.objects.filter(card_authorization_id=authorization_id).count() == 1


def test_other_callers_see_no_card_or_authorization(api, ada, consumer2, management):
    authorization_id = authorize(api, ada.auth, ada.card_id).json()["data"]["authorizationId"]
    other_program = card_customer(card_program(), "Grace Hopper")
    # another customer of the program, with its own token: the card and the authorization are not found
    assert_error(authorize(api, consumer2.auth, ada.card_id), 404, "CARD_NOT_FOUND")
    for action in ("clear", "reverse"):
        assert_error(act(api, consumer2.auth, authorization_id, action), 404, "RESOURCE_NOT_FOUND")
    assert_error(
        api.post(f"/v1/sandbox/cards/{ada.card_id}/freeze", {}, format="json", **consumer2.auth),
        404,
        "CARD_NOT_FOUND",
    )
    # management of another program
    assert_error(
        authorize(api, management.id, ada.card_id, program_id=other_program.program_id), 404, "CARD_NOT_FOUND"
    )
    assert_error(
        act(api, management.id, authorization_id, "clear", program_id=other_program.program_id),
        404,
        "RESOURCE_NOT_FOUND",
    )
    # the lists: another customer's account is not found; a card of another account is CARD_NOT_FOUND
    assert api.get(ada.card_url("/authorizations"), **consumer2.auth).status_code == 404
    foreign_card = consumer2.account_url(f"cards/{ada.card_id}/authorizations")
    assert_error(api.get(foreign_card, **consumer2.auth), 404, "CARD_NOT_FOUND")
    unknown = ada.card_url(f"/authorizations/{uuid.uuid4()}")
    assert_error(api.get(unknown, **ada.auth), 404, "RESOURCE_NOT_FOUND")
    # the wrong kind of token, and another role's
    assert authorize(api, management.access, ada.card_id, program_id=ada.program_id).status_code == 401
    id_token = {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(ada.user).id_token}"}
    assert authorize(api, id_token, ada.card_id).status_code == 401
    assert CardAuthorization.objects.count() == 1
    # while the program's own management caller reaches it
    assert act(api, management.id, authorization_id, "reverse", program_id=ada.program_id).status_code == 200


def test_bad_input_is_400_naming_the_field(api, ada):
    for fields, field in (
        ({"amount": "0"}, "amount"),
        ({"amount": "12.345"}, "amount"),
        ({"currency": "XYZ"}, "currency"),
        ({"currency": "gbp"}, "currency"),
        ({"merchantName": ""}, "merchantName"),
        ({"merchantName": "m" * 71}, "merchantName"),
        ({"merchantName": "Tab\there"}, "merchantName"),
        ({"merchantCategoryCode": "581"}, "merchantCategoryCode"),
        ({"merchantCategoryCode": "58144"}, "merchantCategoryCode"),
    ):
        body = assert_error(authorize(api, ada.auth, ada.card_id, **fields), 400, "VALIDATION_ERROR")
        assert field in [error["field"] for error in body["errors"]]
    assert not CardAuthorization.objects.exists()


def test_beat_expires_authorizations_past_their_expiry(api, ada):
    from cards.tasks import expire_card_authorizations
    from config.beat import BEAT_SCHEDULE

    authorization_id = authorize(api, ada.auth, ada.card_id).json()["data"]["authorizationId"]
    assert BEAT_SCHEDULE["cards-expire-authorizations"]["schedule"] <= 3600
    assert expire_card_authorizations.apply().get() == 0
    CardAuthorization.objects.filter(id=authorization_id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert expire_card_authorizations.apply().get() == 1
    assert figures(api, ada) == ("100000.00", "100000.00", "0.00")


def test_a_clearing_run_clears_many_from_their_holds(api, ada, consumer2):
    from cards.authorizations import authorizations_clear_run

    ids = [
        uuid.UUID(authorize(api, who.auth, who.card_id, amount=amount).json()["data"]["authorizationId"])
        for who, amount in ((ada, "10.00"), (ada, "5.50"), (consumer2, "7.25"))
    ]
    reversed_id = authorize(api, ada.auth, ada.card_id).json()["data"]["authorizationId"]
    act(api, ada.auth, reversed_id, "reverse")

    assert authorizations_clear_run([*ids, uuid.UUID(reversed_id)], chunk=2) == 3
    assert authorizations_clear_run(ids) == 0

    assert figures(api, ada) == ("99984.50", "99984.50", "15.50")
    assert figures(api, consumer2) == ("99992.75", "99992.75", "7.25")
    assert StatementEntry.objects.filter(card_authorization_id__in=ids).count() == 3
    assert Event.objects.filter(type="card_authorization.cleared").count() == 3
    assert CardAuthorization.objects.get(id=reversed_id).status == "REVERSED"


def test_production_tokens_find_no_sandbox_route(api, ada):
    from tests.support.factories import SignedIn, UserFactory

    production = SignedIn(UserFactory(program_id=None, role="management", sandbox=False))
    query = {"program_id": ada.program_id}
    assert_error(authorize(api, production.id, ada.card_id, **query), 404, "CARD_NOT_FOUND")
    for action in ("freeze", "unfreeze"):
        url = f"/v1/sandbox/cards/{ada.card_id}/{action}?programId={ada.program_id}"
        assert_error(api.post(url, {}, format="json", **production.id), 404, "CARD_NOT_FOUND")
    authorization_id = authorize(api, ada.auth, ada.card_id).json()["data"]["authorizationId"]
    assert_error(act(api, production.id, authorization_id, "clear", **query), 404, "RESOURCE_NOT_FOUND")
    incoming = api.post(
        f"/v1/sandbox/incoming-payments?programId={ada.program_id}",
        {"creditorIban": "GB33BUKB20201555555555", "amount": "1.00", "currency": "GBP", "debtorName": "A"},
        format="json",
        **production.id,
    )
    assert_error(incoming, 404, "RESOURCE_NOT_FOUND")


def test_the_list_filters_by_status_and_pages(api, ada):
    for amount in ("1.00", "2.00", "3.00"):
        authorize(api, ada.auth, ada.card_id, amount=amount)
    authorize(api, ada.auth, ada.card_id, currency="EUR")
    first = api.get(ada.card_url("/authorizations?limit=2"), **ada.auth).json()["data"]
    assert [a["amount"] for a in first["authorizations"]] == ["40.00", "3.00"]
    rest = api.get(ada.card_url(f"/authorizations?limit=2&nextToken={first['nextToken']}"), **ada.auth).json()
    assert [a["amount"] for a in rest["data"]["authorizations"]] == ["2.00", "1.00"]
    declined = api.get(ada.card_url("/authorizations?status=DECLINED"), **ada.auth).json()["data"]
    assert [a["declineReason"] for a in declined["authorizations"]] == ["CURRENCY_NOT_SUPPORTED"]
    body = assert_error(
        api.get(ada.card_url("/authorizations?status=HELD"), **ada.auth), 400, "VALIDATION_ERROR"
    )
    assert body["errors"][0]["field"] == "status"


def test_authorizations_of_one_moment_list_in_write_order(api, ada, monkeypatch):
    # A test clock's customers make many objects at one time: the ids order them.
    moment = timezone.now()
    for module in ("cards.authorizations", "cards.serializers_authorizations"):
        monkeypatch.setattr(f"{module}.customer_now", lambda customer_id: moment)
    made = [
        authorize(api, ada.auth, ada.card_id, amount=f"{n}.00").json()["data"]["authorizationId"]
        for n in range(1, 6)
    ]
    listed = api.get(ada.card_url("/authorizations?limit=2"), **ada.auth).json()["data"]
    rest = api.get(ada.card_url(f"/authorizations?limit=10&nextToken={listed['nextToken']}"), **ada.auth)
    ids = [a["authorizationId"] for a in listed["authorizations"] + rest.json()["data"]["authorizations"]]
    assert ids == list(reversed(made))
    assert {uuid.UUID(i).version for i in ids} == {7}
