"""Second-factor lockout: wrong codes count per user across sign-in sessions.

A session tolerates five wrong codes, but a correct password opens a fresh
session at will; without a per-user count, whoever holds the password could
guess codes forever. Five wrong codes (TOTP at verify-2fa or in a step-up, the
e-mailed code at verify-email) within 15 minutes lock the user's codes for 15
minutes: 429 with Retry-After, even for the right code. A right code clears the
count; a right password does not.
"""

from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle
from authn.services.totp import totp_verify
from bankapi.errors import ApiError, ErrorCode
from tests.authn.helpers import assert_error, auth_post, challenge_of, login, tokens_of, totp_now, user
from tests.authn.test_totp import wrong_code
from tests.conftest import requires_postgres
from tests.support.factories import PASSWORD, UserFactory
from tests.support.factories_authn import Person
from tests.support.race import run_at_once


def totp_session(api, person: Person, program: str) -> str:
    return challenge_of(login(api, person.email, person.password, program), "SOFTWARE_TOKEN_MFA")


def verify_2fa(api, session: str, code: str, program: str):
    return auth_post(api, "verify-2fa", {"session_token": session, "totp_code": code}, program=program)


@pytest.fixture
def spare(other_totp_person) -> tuple[Person, str]:
    """A TOTP user of the consumer program (not `totp_person`) and its program."""
    return other_totp_person, other_totp_person.program_id


def test_wrong_codes_across_sessions_lock_the_user_even_for_the_right_code(api, spare):
    person, program = spare
    start = timezone.now()

    with time_machine.travel(start, tick=False):
        bad = wrong_code(person.totp_secret)
        for _ in range(5):  # one wrong code per fresh sign-in: each session is far from its own cap
            session = totp_session(api, person, program)
            refused = verify_2fa(api, session, bad, program)
            assert assert_error(refused, 401, "INVALID_CREDENTIALS")["retryable"] is True

        session = totp_session(api, person, program)  # the password still opens a session...
        locked = verify_2fa(api, session, totp_now(person.totp_secret), program)
        body = assert_error(locked, 429, "TOO_MANY_REQUESTS")  # ...but its right code is refused
        assert body["retryable"] is True and locked["Retry-After"] == str(15 * 60)
        assert "access_token" not in body

    with time_machine.travel(start + timedelta(minutes=14), tick=False):
        session = totp_session(api, person, program)
        still = verify_2fa(api, session, totp_now(person.totp_secret), program)
        assert_error(still, 429, "TOO_MANY_REQUESTS")
        assert still["Retry-After"] == str(60)

    with time_machine.travel(start + timedelta(minutes=15, seconds=1), tick=False):
        session = totp_session(api, person, program)
        tokens_of(verify_2fa(api, session, totp_now(person.totp_secret), program))


# The per-user lock is under test: lift the per-client throttle, which 50 failures
# from the test client's one address would otherwise reach first.
@override_settings(AUTH_CLIENT_MAX_FAILURES=1000)
def test_fifty_guesses_over_ten_sessions_no_longer_sign_in(api, spare):
    """The audit's scenario: ten sign-ins of five guesses each, then the right code."""
    person, program = spare
    statuses = []
    with time_machine.travel(timezone.now(), tick=False):
        bad = wrong_code(person.totp_secret)
        for _ in range(10):
            session = totp_session(api, person, program)
            for _ in range(5):
                statuses.append(verify_2fa(api, session, bad, program).status_code)
        session = totp_session(api, person, program)
        final = verify_2fa(api, session, totp_now(person.totp_secret), program)

    assert statuses.count(401) <= 5 and statuses.count(429) >= 45
    assert_error(final, 429, "TOO_MANY_REQUESTS")


def test_a_correct_password_does_not_clear_the_wrong_codes(api, spare):
    person, program = spare
    with time_machine.travel(timezone.now(), tick=False):
        bad = wrong_code(person.totp_secret)
        session = totp_session(api, person, program)
        for _ in range(4):
            assert_error(verify_2fa(api, session, bad, program), 401, "INVALID_CREDENTIALS")

        fresh = totp_session(api, person, program)
        assert_error(verify_2fa(api, fresh, bad, program), 401, "INVALID_CREDENTIALS")
        assert_error(verify_2fa(api, fresh, totp_now(person.totp_secret), program), 429, "TOO_MANY_REQUESTS")


def test_a_correct_code_clears_the_count(api, spare):
    person, program = spare
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        bad = wrong_code(person.totp_secret)
        session = totp_session(api, person, program)
        for _ in range(4):
            assert_error(verify_2fa(api, session, bad, program), 401, "INVALID_CREDENTIALS")
        tokens_of(verify_2fa(api, session, totp_now(person.totp_secret), program))

    with time_machine.travel(start + timedelta(seconds=31), tick=False):  # a fresh code
        bad = wrong_code(person.totp_secret)
        session = totp_session(api, person, program)
        for _ in range(4):
            assert_error(verify_2fa(api, session, bad, program), 401, "INVALID_CREDENTIALS")
        tokens_of(verify_2fa(api, session, totp_now(person.totp_secret), program))


def test_the_lock_is_per_user(api, totp_person, spare):
    person, program = spare
    customer = totp_person
    with time_machine.travel(timezone.now(), tick=False):
        bad = wrong_code(person.totp_secret)
        for _ in range(5):
            verify_2fa(api, totp_session(api, person, program), bad, program)

        session = totp_session(api, customer, program)
        tokens_of(verify_2fa(api, session, totp_now(customer.totp_secret), program))


def test_step_up_codes_share_the_lockout(api, spare):
    """`totp_verify`, the step-up check other apps call, counts and obeys the same lock."""
    person, program = spare
    holder = user(person.email, program)
    with time_machine.travel(timezone.now(), tick=False):
        bad = wrong_code(person.totp_secret)
        assert [totp_verify(holder, bad) for _ in range(5)] == [False] * 5

        with pytest.raises(ApiError) as refused:
            totp_verify(holder, totp_now(person.totp_secret))
        assert refused.value.code == ErrorCode.TOO_MANY_REQUESTS and refused.value.status == 429
        assert refused.value.headers["Retry-After"] == str(15 * 60)

        session = totp_session(api, person, program)
        assert_error(
            verify_2fa(api, session, totp_now(person.totp_secret), program), 429, "TOO_MANY_REQUESTS"
        )


def _emailed_code() -> str:
    body = mail.outbox[-1].body
    return next(word for word in body.split() if word.rstrip(".").isdigit()).rstrip(".")


def test_wrong_emailed_codes_count_across_sessions(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program, email_verified=False)

    def email_session() -> str:
        return challenge_of(login(api, person.email, PASSWORD, program), "EMAIL_VERIFICATION_REQUIRED")

    for _ in range(5):
        session = email_session()
        wrong = "000000" if _emailed_code() != "000000" else "111111"
        refused = auth_post(api, "verify-email", {"session_token": session, "code": wrong}, program=program)
        assert_error(refused, 401, "INVALID_CREDENTIALS")

    session = email_session()
    locked = auth_post(
        api, "verify-email", {"session_token": session, "code": _emailed_code()}, program=program
    )
    assert_error(locked, 429, "TOO_MANY_REQUESTS")
    assert 0 < int(locked["Retry-After"]) <= 15 * 60
    person.refresh_from_db()
    assert person.email_verified is False


def test_a_right_emailed_code_clears_the_count(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program, email_verified=False)
    session = challenge_of(login(api, person.email, PASSWORD, program), "EMAIL_VERIFICATION_REQUIRED")
    code = _emailed_code()
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(4):
        auth_post(api, "verify-email", {"session_token": session, "code": wrong}, program=program)

    response = auth_post(api, "verify-email", {"session_token": session, "code": code}, program=program)

    challenge_of(response, "SECURITY_SETUP_REQUIRED")
    assert not LoginThrottle.objects.filter(
        factor=LoginThrottle.Factor.SECOND_FACTOR, email=person.email
    ).exists()


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_codes_cannot_outrun_the_lockout(totp_person):
    """20 wrong codes released at once over four sessions: at most five are checked."""
    person, program = totp_person, totp_person.program_id
    sessions = [totp_session(APIClient(), person, program) for _ in range(4)]
    bad = wrong_code(person.totp_secret)
    requests = [session for session in sessions for _ in range(5)]

    def attempt(index: int) -> int:
        return verify_2fa(APIClient(), requests[index], bad, program).status_code

    statuses = run_at_once(len(requests), attempt)

    assert len(statuses) == len(requests) and set(statuses) <= {401, 429}
    assert statuses.count(401) <= 5, f"{statuses.count(401)} codes were checked despite the lockout"
    session = totp_session(APIClient(), person, program)
    assert_error(
        verify_2fa(APIClient(), session, totp_now(person.totp_secret), program), 429, "TOO_MANY_REQUESTS"
    )
