"""A card's secure details (PAN, CVV, expiry, name on card) behind a step-up:
a passkey session opened for that card, a TOTP code, or the user's PIN."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from authn.models import AuthChallenge
from cards.models import Card
from cards.services import card_issue
from tests.authn.helpers import totp_now
from tests.cards.conftest import assert_error
from tests.support.auth import id_header
from tests.support.factories import funded_account
from tests.support.passkeys import enrol_passkey


def challenge(api, holder, **kwargs):
    headers = kwargs.pop("headers", holder.auth)
    return api.post(holder.card_url("/secure/passkey-challenge", **kwargs), **headers)


def reveal(api, holder, confirmation, **kwargs):
    headers = kwargs.pop("headers", holder.auth)
    url = holder.card_url("/secure", **kwargs)
    return api.post(url, {"confirmation": confirmation}, format="json", **headers)


def passkey_confirmation(session: dict, authenticator, **overrides) -> dict:
    return {
        "method": "passkey",
        "passkeySession": session["passkeySession"],
        "assertion": authenticator.get(session["fido2options"], **overrides),
    }


def open_session(api, holder, **kwargs) -> dict:
    response = challenge(api, holder, **kwargs)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def details_of(response, card: Card) -> dict:
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    data = response.json()["data"]
    assert data == {
        "pan": card.pan,
        "cvv": card.cvv,
        "expiryMonth": card.expiry_month,
        "expiryYear": card.expiry_year,
        "nameOnCard": card.name_on_card,
    }
    return data


def wrong(secret: str) -> str:
    return next(code for code in ("000000", "111111", "222222") if code != totp_now(secret))


# The passkey challenge


def test_the_passkey_challenge_answers_a_session_and_the_users_passkeys(api, business):
    authenticator = enrol_passkey(api, business.email, business.program_id)

    response = challenge(api, business)

    assert response.status_code == 200, response.content
    assert response.json()["success"] is True
    data = response.json()["data"]
    assert set(data) == {"passkeySession", "fido2options"}
    options = data["fido2options"]
    assert set(options) == {"challenge", "timeout", "rpId", "userVerification", "allowCredentials"}
    assert options["allowCredentials"] == [{"type": "public-key", "id": authenticator.credential_id_b64}]
    assert isinstance(options["timeout"], int) and options["rpId"] == "localhost"
    assert AuthChallenge.objects.get(kind="STEP_UP_PASSKEY").context["bound_to"] == business.card_id


def test_a_user_without_a_passkey_gets_not_supported(api, business):
    assert_error(challenge(api, business), 422, "NOT_SUPPORTED")


def test_a_body_sent_to_the_passkey_challenge_is_ignored(api, business):
    enrol_passkey(api, business.email, business.program_id)

    response = api.post(
        business.card_url("/secure/passkey-challenge"), {"x": 1}, format="json", **business.auth
    )

    assert response.status_code == 200, response.content


# Revealing the details


def test_a_passkey_confirmation_reveals_the_details_once(api, business):
    authenticator = enrol_passkey(api, business.email, business.program_id)
    session = open_session(api, business)

    data = details_of(reveal(api, business, passkey_confirmation(session, authenticator)), business.card)

    assert data["nameOnCard"] == "ANALYTICAL ENGINES LTD" and data["pan"][-4:] == business.card.last_four
    replay = reveal(api, business, passkey_confirmation(session, authenticator))
    assert_error(replay, 401, "INVALID_CREDENTIALS")


def test_a_totp_code_reveals_the_details_and_is_good_once(api, consumer):
    with time_machine.travel(timezone.now(), tick=False):
        code = totp_now(consumer.totp_secret)

        details_of(reveal(api, consumer, {"method": "totp", "code": code}), consumer.card)

        assert_error(reveal(api, consumer, {"method": "totp", "code": code}), 401, "INVALID_CREDENTIALS")


def test_the_pin_reveals_the_details_where_the_program_offers_it(api, business, consumer):
    details_of(reveal(api, business, {"method": "pin", "pin": business.pin}), business.card)

    wrong_pin = "0000" if business.pin != "0000" else "1111"
    assert_error(reveal(api, business, {"method": "pin", "pin": wrong_pin}), 401, "INVALID_CREDENTIALS")
    assert_error(reveal(api, consumer, {"method": "pin", "pin": "1234"}), 422, "NOT_SUPPORTED")


def test_a_session_opened_for_one_card_does_not_reveal_another(api, business):
    authenticator = enrol_passkey(api, business.email, business.program_id)
    second = card_issue(account=business.account, name_on_card="Second Card")
    session = open_session(api, business)

    other_card = reveal(api, business, passkey_confirmation(session, authenticator), card_id=str(second.id))

    assert_error(other_card, 401, "INVALID_CREDENTIALS")
    details_of(reveal(api, business, passkey_confirmation(session, authenticator)), business.card)
    second_session = open_session(api, business, card_id=str(second.id))
    details_of(
        reveal(api, business, passkey_confirmation(second_session, authenticator), card_id=str(second.id)),
        second,
    )


def test_an_expired_session_is_refused(api, business):
    authenticator = enrol_passkey(api, business.email, business.program_id)
    session = open_session(api, business)

    with time_machine.travel(timezone.now() + timedelta(minutes=5, seconds=1)):
        response = reveal(api, business, passkey_confirmation(session, authenticator))

    assert_error(response, 401, "INVALID_CREDENTIALS")


def test_a_forged_or_foreign_assertion_is_refused_and_not_counted(api, business):
    authenticator = enrol_passkey(api, business.email, business.program_id)
    session = open_session(api, business)
    forged = [
        passkey_confirmation(session, authenticator, origin="https://evil.example"),
        {
            "method": "passkey",
            "passkeySession": "made-up",
            "assertion": authenticator.get(session["fido2options"]),
        },
    ]

    for confirmation in forged:
        assert_error(reveal(api, business, confirmation), 401, "INVALID_CREDENTIALS")

    # Not counted towards the second-factor lockout: the PIN still works after.
    details_of(reveal(api, business, {"method": "pin", "pin": business.pin}), business.card)
    details_of(reveal(api, business, passkey_confirmation(session, authenticator)), business.card)
    # A copy of that signature's counter on a new session: a cloned authenticator.
    replayed = passkey_confirmation(
        open_session(api, business), authenticator, sign_count=authenticator.sign_count
    )
    assert_error(reveal(api, business, replayed), 401, "INVALID_CREDENTIALS")


def test_five_wrong_codes_lock_the_users_codes(api, business):
    with time_machine.travel(timezone.now(), tick=False):
        bad = wrong(business.totp_secret)
        for _ in range(5):
            assert_error(reveal(api, business, {"method": "totp", "code": bad}), 401, "INVALID_CREDENTIALS")

        locked = reveal(api, business, {"method": "pin", "pin": business.pin})

    assert_error(locked, 429, "TOO_MANY_REQUESTS")
    assert int(locked["Retry-After"]) > 0
    assert "pan" not in locked.json()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "confirmation"),
        ({"confirmation": None}, "confirmation"),
        ({"confirmation": "totp"}, "confirmation"),
        ({"confirmation": {"method": "sms", "code": "123456"}}, "confirmation.method"),
        ({"confirmation": {"method": "totp"}}, "confirmation.code"),
        ({"confirmation": {"method": "totp", "code": "12345"}}, "confirmation.code"),
        ({"confirmation": {"method": "totp", "code": 123456}}, "confirmation.code"),
        ({"confirmation": {"method": "pin", "pin": "12"}}, "confirmation.pin"),
        ({"confirmation": {"method": "passkey", "passkeySession": "x"}}, "confirmation.assertion"),
        (
            {
                "confirmation": {
                    "method": "passkey",
                    "passkeySession": "x",
                    "assertion": {"credentialIdB64": "!"},
                }
            },
            "confirmation.assertion.credentialIdB64",
        ),
    ],
)
def test_a_malformed_confirmation_is_bad_input(api, business, body, field):
    response = api.post(business.card_url("/secure"), body, format="json", **business.auth)

    answer = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in [error["field"] for error in answer["errors"]], answer


# Who may see which card


@pytest.mark.parametrize("route", ["/secure/passkey-challenge", "/secure"])
def test_cards_not_on_that_account_are_card_not_found(api, consumer, consumer2, route):
    def call(card_id, account_id=None):
        url = (
            consumer.card_url(route, card_id=card_id)
            if account_id is None
            else consumer.account_url(f"cards/{card_id}{route}", account_id)
        )
        return api.post(
            url, {"confirmation": {"method": "totp", "code": "123456"}}, format="json", **consumer.auth
        )

    cases = [
        call("5f0f7a3e-2f5c-4c7e-9a52-8d9b8a1f0c11"),
        call("not-a-card"),
        call(consumer2.card_id),
        call(consumer.card_id, str(funded_account(consumer.customer, "0.00").id)),
    ]

    for response in cases:
        body = assert_error(response, 404, "CARD_NOT_FOUND")
        assert "pan" not in body


@pytest.mark.parametrize("route", ["/secure/passkey-challenge", "/secure"])
def test_customers_and_accounts_not_visible_are_resource_not_found(api, consumer, consumer2, business, route):
    body = {"confirmation": {"method": "totp", "code": "123456"}}
    urls = [
        # Another customer, its account and card, all named in the path.
        consumer2.card_url(route),
        # The caller's customer with another customer's account.
        consumer.account_url(f"cards/{consumer2.card_id}{route}", consumer2.account_id),
        # Another program's customer.
        business.card_url(route),
        f"/v1/customers/nobody/accounts/{consumer.account_id}/cards/{consumer.card_id}{route}",
    ]

    for url in urls:
        assert_error(api.post(url, body, format="json", **consumer.auth), 404, "RESOURCE_NOT_FOUND")


def test_the_card_is_resolved_before_the_body_is_read(api, consumer, consumer2):
    response = api.post(
        consumer.card_url("/secure", card_id=consumer2.card_id),
        {"confirmation": 5},
        format="json",
        **consumer.auth,
    )

    assert_error(response, 404, "CARD_NOT_FOUND")


@pytest.mark.parametrize("route", ["/secure/passkey-challenge", "/secure"])
def test_the_id_token_and_no_token_are_unauthorized(api, consumer, route):
    code = {"confirmation": {"method": "totp", "code": totp_now(consumer.totp_secret)}}
    id_token = api.post(
        consumer.card_url(route),
        code,
        format="json",
        **id_header(consumer.email, consumer.program_id),
    )
    no_token = api.post(consumer.card_url(route), code, format="json")

    assert_error(id_token, 401, "UNAUTHORIZED")
    assert_error(no_token, 401, "UNAUTHORIZED")


def test_ten_reveals_sharing_one_code_do_not_lock_the_user(api, consumer):
    """A right code sent again is refused (401) but is not a wrong guess: ten
    reveals with one code are one 200 and nine 401, never 429, and the next
    code still works."""
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        code = totp_now(consumer.totp_secret)
        statuses = [reveal(api, consumer, {"method": "totp", "code": code}).status_code for _ in range(10)]

    assert statuses == [200] + [401] * 9
    with time_machine.travel(start + timedelta(seconds=31), tick=False):
        details_of(
            reveal(api, consumer, {"method": "totp", "code": totp_now(consumer.totp_secret)}), consumer.card
        )
