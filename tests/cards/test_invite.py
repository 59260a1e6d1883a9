"""POST .../cards/{cardId}/cardholders: put a cardholder of the card's account on the card."""

import pytest

from cards.models import Cardholder
from cards.services import cardholder_create
from tests.cards.conftest import assert_error
from tests.support.auth import id_header
from tests.support.factories import funded_account


def invite(api, holder, cardholder_id, **kwargs):
    headers = kwargs.pop("headers", holder.auth)
    return api.post(
        holder.card_url("/cardholders", **kwargs), {"cardholderId": cardholder_id}, format="json", **headers
    )


def a_cardholder(account, first_name="Grace") -> Cardholder:
    return cardholder_create(account=account, first_name=first_name, last_name="Hopper")


def test_cardholders_of_the_account_are_put_on_the_card(api, business):
    grace, alan = a_cardholder(business.account), a_cardholder(business.account, "Alan")

    first = invite(api, business, str(grace.id))
    second = invite(api, business, str(alan.id))

    assert first.status_code == 200, first.content
    assert first.json() == {
        "success": True,
        "data": {"cardId": business.card_id, "cardholderIds": [str(grace.id)]},
    }
    assert second.json()["data"]["cardholderIds"] == [str(grace.id), str(alan.id)]
    assert set(business.card.cardholders.all()) == {grace, alan}


def test_inviting_a_cardholder_already_on_the_card_answers_the_same(api, business):
    grace = a_cardholder(business.account)
    invite(api, business, str(grace.id))

    again = invite(api, business, str(grace.id))

    assert again.status_code == 200
    assert again.json()["data"]["cardholderIds"] == [str(grace.id)]
    assert business.card.cardholders.count() == 1


def test_a_cardholder_of_another_account_is_not_found(api, business):
    other_account = funded_account(business.customer, "0.00")
    elsewhere = a_cardholder(other_account)

    for cardholder_id in (str(elsewhere.id), "5f0f7a3e-2f5c-4c7e-9a52-8d9b8a1f0c11", "nobody"):
        assert_error(invite(api, business, cardholder_id), 404, "RESOURCE_NOT_FOUND")
    assert not business.card.cardholders.exists()


def test_a_program_without_cardholders_is_not_supported_before_the_cardholder_is_looked_up(api, consumer):
    assert_error(invite(api, consumer, "nobody"), 422, "NOT_SUPPORTED")
    assert_error(invite(api, consumer, "nobody", card_id="nothing"), 404, "CARD_NOT_FOUND")


@pytest.mark.parametrize(
    "body", [{}, {"cardholderId": ""}, {"cardholderId": 5}, {"cardholderId": None}, [], "x"]
)
def test_a_malformed_body_is_bad_input(api, business, body):
    response = api.post(business.card_url("/cardholders"), body, format="json", **business.auth)

    assert_error(response, 400, "VALIDATION_ERROR")


def test_cards_and_accounts_not_visible_are_not_found(api, business, consumer):
    grace = a_cardholder(business.account)
    program = consumer.program
    program.cardholders_enabled = True
    program.save()

    assert_error(
        invite(api, consumer, str(grace.id), headers=consumer.auth, card_id=business.card_id),
        404,
        "CARD_NOT_FOUND",
    )
    assert_error(invite(api, business, str(grace.id), headers=consumer.auth), 404, "RESOURCE_NOT_FOUND")
    assert not business.card.cardholders.exists()


def test_the_id_token_is_unauthorized(api, business):
    grace = a_cardholder(business.account)

    response = invite(api, business, str(grace.id), headers=id_header(business.email, business.program_id))

    assert_error(response, 401, "UNAUTHORIZED")
    assert not business.card.cardholders.exists()
