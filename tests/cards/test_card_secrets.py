"""PAN and CVV are secrets: encrypted in the database, and shown by the secure-details
route only: never in logs, errors, other answers or admin."""

import logging
import re

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from bankapi.crypto import decrypt
from cards.numbers import luhn_check_digit
from cards.services import card_issue, card_numbers_resolve
from tests.authn.helpers import totp_now
from tests.cards.conftest import assert_error
from tests.support.factories_backoffice import operator_user

PAN_BODY = "400000987654321"
PAN = PAN_BODY + luhn_check_digit(PAN_BODY)
CVV = "3579"
LOGGERS = ("", "django", "django.request", "django.server", "django.db.backends", "bankapi", "authn", "cards")


@pytest.fixture
def card(consumer):
    numbers = card_numbers_resolve(
        account=consumer.account, pan=PAN, cvv=CVV, expiry_month=7, expiry_year=2031
    )
    return card_issue(account=consumer.account, name_on_card="Sandbox Customer One", numbers=numbers)


def shows_a_secret(text: str) -> bool:
    # The CVV as a number of its own: not a piece of a UUID, a hex digest or a timing.
    return PAN in text or bool(re.search(rf"(?<![\w.]){CVV}(?![\w.])", text))


def test_pan_and_cvv_are_not_stored_in_clear(card):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pan, cvv, last_four FROM cards_card WHERE id = %s",
            [card.id.hex if connection.vendor == "sqlite" else card.id],
        )
        pan_column, cvv_column, last_four = cursor.fetchone()

    assert PAN not in pan_column and CVV not in cvv_column
    assert decrypt(pan_column) == PAN and decrypt(cvv_column) == CVV
    assert last_four == PAN[-4:]
    assert PAN not in str(card) and PAN not in repr(card)


def test_a_full_secure_details_request_logs_neither_pan_nor_cvv(api, consumer, card, caplog):
    url = consumer.account_url(f"cards/{card.id}/secure")
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)

    with time_machine.travel(timezone.now(), tick=False), CaptureQueriesContext(connection) as queries:
        wrong = "000000" if totp_now(consumer.totp_secret) != "000000" else "111111"
        refused = api.post(
            url, {"confirmation": {"method": "totp", "code": wrong}}, format="json", **consumer.auth
        )
        code = totp_now(consumer.totp_secret)
        shown = api.post(
            url, {"confirmation": {"method": "totp", "code": code}}, format="json", **consumer.auth
        )

    assert_error(refused, 401, "INVALID_CREDENTIALS")
    assert (
        shown.status_code == 200 and shown.json()["data"]["pan"] == PAN and shown.json()["data"]["cvv"] == CVV
    )
    # The capture is live: the request's SQL and its 401 warning were logged.
    assert any(
        record.name == "django.db.backends" and "cards_card" in record.getMessage()
        for record in caplog.records
    )
    assert any(record.name == "django.request" for record in caplog.records)
    assert len(queries) > 0
    for record in caplog.records:
        assert not shows_a_secret(record.getMessage()), record.name
        assert not shows_a_secret(repr(record.args)), record.name
    assert not shows_a_secret(caplog.text)
    assert not any(shows_a_secret(query["sql"]) for query in queries.captured_queries)


def test_other_answers_show_neither(api, business):
    card = business.card
    pan, cvv = card.pan, card.cvv
    responses = [
        api.post(business.card_url("/secure/passkey-challenge"), **business.auth),
        api.post(
            business.card_url("/cardholders"), {"cardholderId": "nobody"}, format="json", **business.auth
        ),
        api.post(
            business.card_url("/secure"),
            {"confirmation": {"method": "pin", "pin": "12"}},
            format="json",
            **business.auth,
        ),
        api.post(
            business.card_url("/secure"),
            {"confirmation": {"method": "totp", "code": "000000"}},
            format="json",
            **business.auth,
        ),
        api.get("/v1/capabilities", **business.auth),
    ]

    for response in responses:
        assert pan not in response.content.decode()
        assert f'"{cvv}"' not in response.content.decode()


def test_admin_shows_the_last_four_only(client, consumer, card):
    client.force_login(operator_user())

    pages = [
        client.get("/admin/cards/card/"),
        client.get(f"/admin/cards/card/{card.id}/change/"),
        client.get("/admin/cards/card/add/"),
    ]
    # The PAN is not searchable: the search box echoes it, but nothing matches.
    search = client.get(f"/admin/cards/card/?q={PAN}")

    assert [page.status_code for page in pages] == [200, 200, 200]
    assert search.status_code == 200 and str(card.id) not in search.content.decode()
    assert f"•••• {PAN[-4:]}" in pages[0].content.decode()
    assert f"•••• {PAN[-4:]}" in pages[1].content.decode()
    for page in pages:
        html = page.content.decode()
        assert not shows_a_secret(html)
        assert 'name="pan"' not in html and 'name="cvv"' not in html
