"""Issuing cards: the service admin and the sandbox bootstrap use."""

import copy
import json

import pytest
from django.utils import timezone
from openapi_schema_validator import OAS30ReadValidator

from bankapi.errors import ApiError
from bankapi.models import Account
from cards.models import Card
from cards.numbers import luhn_check_digit, luhn_valid
from cards.services import card_issue, card_numbers_resolve, cardholder_create
from events.models import Event
from events.payloads import event_payload
from tests.authn.test_sandbox_rerun import rerun_bootstrap
from tests.support.factories import funded_account
from tests.support.factories_backoffice import operator_user
from tests.support.openapi import _closed, openapi_document


def test_sandbox_cards_get_luhn_valid_test_numbers(consumer):
    card = card_issue(account=consumer.account, name_on_card="  Ada   Lovelace ")
    today = timezone.now().date()

    assert luhn_valid(card.pan) and card.pan.startswith("400000") and len(card.pan) == 16
    assert len(card.cvv) == 3 and card.cvv.isdigit()
    assert card.last_four == card.pan[-4:]
    assert (card.expiry_month, card.expiry_year) == (today.month, today.year + 3)
    assert card.name_on_card == "ADA LOVELACE"
    assert (card.program_id, card.sandbox, card.status) == (consumer.account.program_id, True, "ACTIVE")


def test_the_luhn_check():
    assert luhn_valid("4111111111111111") and luhn_valid("378282246310005") and luhn_valid("6011111111111117")
    assert (
        not luhn_valid("4111111111111112")
        and not luhn_valid("41111111111")
        and not luhn_valid("4111 1111 1111 1111")
    )
    assert luhn_check_digit("7992739871") == "3"


@pytest.mark.parametrize(
    ("numbers", "field"),
    [
        ({"pan": "4111111111111112", "cvv": "123", "expiry_month": 1, "expiry_year": 2099}, "pan"),
        ({"pan": "4111111111111111", "cvv": "12", "expiry_month": 1, "expiry_year": 2099}, "cvv"),
        ({"pan": "4111111111111111", "cvv": "123", "expiry_month": 13, "expiry_year": 2099}, "expiryMonth"),
        ({"pan": "4111111111111111", "cvv": "123", "expiry_month": 1, "expiry_year": 2020}, "expiryYear"),
        ({"pan": "4111111111111111"}, "cvv"),
    ],
)
def test_numbers_a_processor_supplies_are_checked(consumer, numbers, field):
    with pytest.raises(ApiError) as refused:
        card_numbers_resolve(account=consumer.account, **numbers)

    assert refused.value.extra["errors"][0]["field"] == field
    assert "4111111111111111" not in refused.value.message


def test_production_cards_need_the_processors_numbers(consumer):
    account = consumer.account
    production = Account.objects.create(
        program=account.program, sandbox=False, customer=account.customer, currency="GBP", name="Live"
    )

    with pytest.raises(ApiError):
        card_numbers_resolve(account=production)
    numbers = card_numbers_resolve(
        account=production, pan="4111111111111111", cvv="123", expiry_month=1, expiry_year=2099
    )
    card = card_issue(account=production, name_on_card="Live Card", numbers=numbers)
    assert (card.sandbox, card.pan) == (False, "4111111111111111")


def test_cardholders_of_another_account_cannot_hold_a_new_card(business):
    other_account = funded_account(business.customer, "0.00")
    elsewhere = cardholder_create(account=other_account, first_name="Eve")

    with pytest.raises(ApiError):
        card_issue(account=business.account, name_on_card="X", cardholders=[elsewhere])
    assert Card.objects.filter(account=business.account).count() == 1


def test_bootstrap_issues_one_card_per_customer_on_its_main_account(sandbox):
    for key in ("customer", "customer2", "business"):
        card = Card.objects.get(id=sandbox[key]["cardId"])
        assert str(card.account_id) == sandbox[key]["accountId"]
        assert card.name_on_card == card.account.customer.name.upper()
        assert luhn_valid(card.pan)


def test_a_bootstrap_rerun_prints_the_same_cards_and_makes_none(sandbox):
    before = Card.objects.count()
    consumer_account = Account.objects.get(id=sandbox["customer"]["accountId"])
    card_issue(account=consumer_account, name_on_card="Issued Later")

    again = rerun_bootstrap()

    assert [again[key]["cardId"] for key in ("customer", "customer2", "business")] == [
        sandbox[key]["cardId"] for key in ("customer", "customer2", "business")
    ]
    assert Card.objects.count() == before + 1


def test_operators_issue_a_sandbox_card_in_admin(client, consumer2):
    client.force_login(operator_user())
    account_id = consumer2.account_id

    response = client.post("/admin/cards/card/add/", {"account": account_id, "name_on_card": "Second Card"})

    assert response.status_code == 302, response.content.decode()[:3000]
    card = Card.objects.get(account_id=account_id, name_on_card="SECOND CARD")
    assert luhn_valid(card.pan)


def test_admin_refuses_bad_processor_numbers_without_echoing_them(client, consumer2):
    client.force_login(operator_user())
    account_id = consumer2.account_id

    response = client.post(
        "/admin/cards/card/add/",
        {"account": account_id, "name_on_card": "Bad", "card_number": "4111111111111112", "card_cvv": "987"},
    )

    assert response.status_code == 200
    assert "Luhn" in response.content.decode() and "4111111111111112" not in response.content.decode()
    assert not Card.objects.filter(name_on_card="BAD").exists()


def test_issuing_records_a_card_issued_event_without_the_secrets(consumer):
    card = card_issue(account=consumer.account, name_on_card="Event Card")

    event = Event.objects.get(type="card.issued", resource_id=str(card.id))

    assert event.data == {
        "cardId": str(card.id),
        "accountId": consumer.account_id,
        "customerId": consumer.customer_id,
        "status": "ACTIVE",
        "lastFour": card.pan[-4:],
        "expiryMonth": card.expiry_month,
        "expiryYear": card.expiry_year,
        "nameOnCard": "EVENT CARD",
        "cardholderIds": [],
    }
    assert str(event.customer_id) == consumer.customer_id
    assert (str(event.program_id), event.sandbox) == (consumer.program_id, True)
    assert card.pan not in str(event.data) and f"'{card.cvv}'" not in str(event.data)


def test_the_card_issued_delivery_matches_its_documented_payload(consumer):
    card = card_issue(account=consumer.account, name_on_card="Documented Card")
    payload = json.loads(
        json.dumps(event_payload(Event.objects.get(type="card.issued", resource_id=str(card.id))))
    )
    document = openapi_document()
    callback = document["paths"]["/v1/webhook-endpoints"]["post"]["callbacks"]["card.issued"]
    schema = callback["{$request.body#/url}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    root = {"allOf": [_closed(schema)], "components": _closed(copy.deepcopy(document["components"]))}

    errors = list(OAS30ReadValidator(root).iter_errors(payload))

    assert errors == [], [error.message for error in errors]
    assert set(payload["data"]) == {
        "cardId",
        "accountId",
        "customerId",
        "status",
        "lastFour",
        "expiryMonth",
        "expiryYear",
        "nameOnCard",
        "cardholderIds",
    }
