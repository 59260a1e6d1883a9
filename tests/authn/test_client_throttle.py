"""The per-client throttle and the passkey sign-in lockout.

One client address may fail login, verify-2fa and verify-passkey 50 times in 15
minutes, whichever users it tries; then every such attempt answers 429 with
Retry-After, the right password included, until the window ends. Only failures
count. The address is the TCP peer's unless TRUSTED_PROXY_COUNT trusts hops of
X-Forwarded-For.
"""

import uuid
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from tests.authn.helpers import assert_error, auth_post, challenge_of, totp_now
from tests.authn.test_passkeys import passkey_login, register
from tests.support.factories_authn import Person
from tests.support.webauthn import SoftwareAuthenticator


def login(api, email: str, password: str, program: str, **extra):
    return auth_post(api, "login", {"email": email, "password": password}, program=program, **extra)


def verify(api, session_token: str, assertion: dict, program: str, **extra):
    body = {"session_token": session_token, "assertion": assertion}
    return auth_post(api, "verify-passkey", body, program=program, **extra)


def from_address(address: str, **headers) -> dict:
    return {"REMOTE_ADDR": address, **headers}


def wrong_login(api, program: str | None, address: str, **headers):
    """A wrong password for a fresh e-mail each time: no per-e-mail lockout gets in the way."""
    email = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
    return login(api, email, "wrong password 123", program, **from_address(address, **headers))


def spare_login(api, spare: Person, address: str, **headers):
    """The right password of a user with TOTP."""
    return login(api, spare.email, spare.password, spare.program_id, **from_address(address, **headers))


def test_fifty_failures_from_one_client_throttle_every_sign_in_from_it_the_right_password_included(
    api, totp_person
):
    statuses = [wrong_login(api, totp_person.program_id, "203.0.113.7").status_code for _ in range(50)]
    assert statuses == [401] * 50

    refused = spare_login(api, totp_person, "203.0.113.7")

    body = assert_error(refused, 429, "TOO_MANY_REQUESTS")
    assert body["retryable"] is True
    assert 0 < int(refused["Retry-After"]) <= 15 * 60
    assert wrong_login(api, totp_person.program_id, "203.0.113.7").status_code == 429
    # Another client is not affected.
    challenge_of(spare_login(api, totp_person, "203.0.113.8"), "SOFTWARE_TOKEN_MFA")


def test_the_throttle_lifts_when_its_window_ends(api, totp_person):
    start = timezone.now()
    with override_settings(AUTH_CLIENT_MAX_FAILURES=3), time_machine.travel(start, tick=False):
        for _ in range(3):
            assert wrong_login(api, totp_person.program_id, "203.0.113.9").status_code == 401
        assert spare_login(api, totp_person, "203.0.113.9").status_code == 429
    with (
        override_settings(AUTH_CLIENT_MAX_FAILURES=3),
        time_machine.travel(start + timedelta(minutes=15, seconds=1)),
    ):
        challenge_of(spare_login(api, totp_person, "203.0.113.9"), "SOFTWARE_TOKEN_MFA")


@override_settings(AUTH_CLIENT_MAX_FAILURES=3)
def test_only_failures_count(api, consumer_program, totp_person):
    for _ in range(10):
        challenge_of(spare_login(api, totp_person, "198.51.100.1"), "SOFTWARE_TOKEN_MFA")
    bad_input = login(api, "", "", str(consumer_program.id), **from_address("198.51.100.1"))
    assert bad_input.status_code == 400
    for _ in range(2):
        assert wrong_login(api, totp_person.program_id, "198.51.100.1").status_code == 401

    challenge_of(spare_login(api, totp_person, "198.51.100.1"), "SOFTWARE_TOKEN_MFA")


@override_settings(AUTH_CLIENT_MAX_FAILURES=3)
def test_wrong_codes_at_verify_2fa_count_for_the_client(api, totp_person):
    spare, program = totp_person, totp_person.program_id
    address = from_address("198.51.100.2")
    session = challenge_of(spare_login(api, totp_person, "198.51.100.2"), "SOFTWARE_TOKEN_MFA")
    for _ in range(3):
        wrong = auth_post(
            api, "verify-2fa", {"session_token": session, "totp_code": "000000"}, program=program, **address
        )
        assert_error(wrong, 401, "INVALID_CREDENTIALS")

    right = auth_post(
        api,
        "verify-2fa",
        {"session_token": session, "totp_code": totp_now(spare.totp_secret)},
        program=program,
        **address,
    )

    assert_error(right, 429, "TOO_MANY_REQUESTS")
    # Whole seconds until the window ends, as a client would wait them out.
    assert 0 < int(right["Retry-After"]) <= settings.AUTH_CLIENT_WINDOW_SECONDS


@override_settings(AUTH_CLIENT_MAX_FAILURES=3)
def test_failed_passkey_sign_ins_count_for_the_client(api, setup_person):
    authenticator = SoftwareAuthenticator()
    program = register(api, setup_person, authenticator)
    address = from_address("198.51.100.3")
    for _ in range(3):
        challenge = passkey_login(api, setup_person)
        forged = {**authenticator.get(challenge["fido2options"]), "signatureB64": "AAAA"}
        assert_error(
            verify(api, challenge["session_token"], forged, program, **address), 401, "INVALID_CREDENTIALS"
        )

    challenge = passkey_login(api, setup_person)
    response = verify(
        api, challenge["session_token"], authenticator.get(challenge["fido2options"]), program, **address
    )

    assert_error(response, 429, "TOO_MANY_REQUESTS")


def test_five_failed_passkey_sign_ins_lock_passkey_sign_in_for_the_user(api, setup_person):
    authenticator = SoftwareAuthenticator()
    program = register(api, setup_person, authenticator)
    for attempt in range(5):
        challenge = passkey_login(api, setup_person)
        forged = {**authenticator.get(challenge["fido2options"]), "signatureB64": "AAAA"}
        address = from_address(f"192.0.2.{attempt}")  # a different client each time
        assert_error(
            verify(api, challenge["session_token"], forged, program, **address), 401, "INVALID_CREDENTIALS"
        )

    challenge = passkey_login(api, setup_person)
    locked = verify(api, challenge["session_token"], authenticator.get(challenge["fido2options"]), program)

    assert_error(locked, 429, "TOO_MANY_REQUESTS")
    assert int(locked["Retry-After"]) > 0


def test_a_verified_passkey_sign_in_clears_the_users_count(api, setup_person):
    authenticator = SoftwareAuthenticator()
    program = register(api, setup_person, authenticator)
    for _ in range(4):
        challenge = passkey_login(api, setup_person)
        forged = {**authenticator.get(challenge["fido2options"]), "signatureB64": "AAAA"}
        assert verify(api, challenge["session_token"], forged, program).status_code == 401
    challenge = passkey_login(api, setup_person)
    assert (
        verify(
            api, challenge["session_token"], authenticator.get(challenge["fido2options"]), program
        ).status_code
        == 200
    )

    for _ in range(4):
        challenge = passkey_login(api, setup_person)
        forged = {**authenticator.get(challenge["fido2options"]), "signatureB64": "AAAA"}
        assert verify(api, challenge["session_token"], forged, program).status_code == 401
    challenge = passkey_login(api, setup_person)
    assert (
        verify(
            api, challenge["session_token"], authenticator.get(challenge["fido2options"]), program
        ).status_code
        == 200
    )


@override_settings(AUTH_CLIENT_MAX_FAILURES=3)
def test_x_forwarded_for_is_ignored_unless_proxies_are_trusted(api, totp_person):
    for spoof in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        assert (
            wrong_login(api, totp_person.program_id, "198.51.100.4", HTTP_X_FORWARDED_FOR=spoof).status_code
            == 401
        )

    spoofed = spare_login(api, totp_person, "198.51.100.4", HTTP_X_FORWARDED_FOR="10.0.0.4")

    assert_error(spoofed, 429, "TOO_MANY_REQUESTS")


@pytest.mark.parametrize(
    ("hops", "forwarded", "other_forwarded"),
    [
        (1, "1.1.1.1, 203.0.113.50", "1.1.1.1, 203.0.113.51"),
        (2, "9.9.9.9, 203.0.113.60, 10.1.1.1", "9.9.9.9, 203.0.113.61, 10.1.1.1"),
    ],
)
def test_with_trusted_proxies_the_client_is_the_hop_they_name(
    api, totp_person, hops, forwarded, other_forwarded
):
    proxy = "10.9.9.9"  # every request comes through the same proxy
    with override_settings(AUTH_CLIENT_MAX_FAILURES=3, TRUSTED_PROXY_COUNT=hops):
        for _ in range(3):
            assert (
                wrong_login(api, totp_person.program_id, proxy, HTTP_X_FORWARDED_FOR=forwarded).status_code
                == 401
            )
        assert spare_login(api, totp_person, proxy, HTTP_X_FORWARDED_FOR=forwarded).status_code == 429
        # A spoofed leftmost entry does not escape; another real client is not throttled.
        assert (
            spare_login(api, totp_person, proxy, HTTP_X_FORWARDED_FOR="8.8.8.8, " + forwarded).status_code
            == 429
        )
        challenge_of(
            spare_login(api, totp_person, proxy, HTTP_X_FORWARDED_FOR=other_forwarded), "SOFTWARE_TOKEN_MFA"
        )
