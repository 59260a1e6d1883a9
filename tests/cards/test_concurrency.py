"""One passkey session, one reveal: parallel requests with the same session and
assertion cannot both see the card (PostgreSQL, real threads)."""

import pytest
from rest_framework.test import APIClient

from tests.cards.test_secure_details import open_session, passkey_confirmation
from tests.conftest import requires_postgres
from tests.support.passkeys import enrol_passkey
from tests.support.race import run_at_once


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_reveals_with_one_passkey_session_show_the_card_once(business):
    client = APIClient()
    authenticator = enrol_passkey(client, business.email, business.program_id)
    # Several authenticator answers for one session; counters rise, so only the
    # session's single use can stop all but one.
    session = open_session(client, business)
    confirmations = [passkey_confirmation(session, authenticator) for _ in range(4)]
    url, headers = business.card_url("/secure"), business.auth

    def reveal(index: int) -> int:
        body = {"confirmation": confirmations[index]}
        return APIClient().post(url, body, format="json", **headers).status_code

    statuses = run_at_once(len(confirmations), reveal)

    assert sorted(statuses) == [200, 401, 401, 401]
