"""Lockout: five failed passwords within 15 minutes lock the
(program, e-mail) for 15 minutes, known address or not."""

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle, User
from tests.authn.helpers import assert_error, auth_post, challenge_of, login
from tests.conftest import requires_postgres
from tests.support.race import run_at_once


def fail_five_times(api, email: str, program: str) -> None:
    for _ in range(5):
        assert_error(login(api, email, "wrong-password", program), 401, "INVALID_CREDENTIALS")


def test_five_failures_lock_even_the_right_password_for_fifteen_minutes(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    start = timezone.now()

    with time_machine.travel(start, tick=False):
        fail_five_times(api, customer.email, program)
        locked = login(api, customer.email, customer.password, program)
        body = assert_error(locked, 429, "TOO_MANY_REQUESTS")
        assert body["retryable"] is True
        assert locked["Retry-After"] == str(15 * 60)

    with time_machine.travel(start + timedelta(minutes=14), tick=False):
        still_locked = login(api, customer.email, customer.password, program)
        assert_error(still_locked, 429, "TOO_MANY_REQUESTS")
        assert still_locked["Retry-After"] == str(60)

    with time_machine.travel(start + timedelta(minutes=15, seconds=1), tick=False):
        challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")


def test_an_unknown_email_locks_exactly_like_a_known_one(api, totp_person, consumer_program):
    program = str(consumer_program.id)
    customer = totp_person

    # The clock stands still: both e-mails lock at the same instant, so any
    # difference in Retry-After is a difference in treatment, not seconds that
    # ticked between the two sequences of requests.
    with time_machine.travel(timezone.now(), tick=False):
        fail_five_times(api, "nobody@sandbox.example", program)
        fail_five_times(api, customer.email, program)

        unknown = login(api, "nobody@sandbox.example", "anything", program)
        known = login(api, customer.email, customer.password, program)

    assert_error(unknown, 429, "TOO_MANY_REQUESTS")
    assert unknown.json() == known.json()
    assert unknown["Retry-After"] == known["Retry-After"] == str(15 * 60)


def test_failures_older_than_the_window_do_not_add_up(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    start = timezone.now()

    with time_machine.travel(start, tick=False):
        for _ in range(4):
            login(api, customer.email, "wrong-password", program)
    with time_machine.travel(start + timedelta(minutes=16), tick=False):
        assert_error(login(api, customer.email, "wrong-password", program), 401, "INVALID_CREDENTIALS")
        challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")


def test_a_correct_password_forgets_earlier_failures(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    for _ in range(4):
        login(api, customer.email, "wrong-password", program)
    challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
    for _ in range(4):
        login(api, customer.email, "wrong-password", program)

    challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")


def test_the_lock_is_per_program(api, totp_person, consumer_program, business_program):
    customer = totp_person
    fail_five_times(api, customer.email, str(business_program.id))

    challenge_of(
        login(api, customer.email, customer.password, str(consumer_program.id)),
        "SOFTWARE_TOKEN_MFA",
    )


def test_wrong_temporary_passwords_on_change_password_count_too(api, new_person):
    new_user = new_person
    program = new_user.program_id
    for _ in range(5):
        response = auth_post(
            api,
            "change-password",
            {
                "email": new_user.email,
                "temporary_password": "wrong",
                "new_password": "Brand-New-Passphrase-7",
            },
            program=program,
        )
        assert_error(response, 401, "INVALID_CREDENTIALS")

    assert_error(login(api, new_user.email, new_user.password, program), 429, "TOO_MANY_REQUESTS")


def test_attempts_arriving_while_a_password_is_checked_count_against_the_same_five(api, totp_person):
    """The attempt is counted before the slow hash: four more guesses sent while the
    first password is still being checked, and a fifth, find the pair already counting."""
    spare, program = totp_person, totp_person.program_id
    check_password = User.check_password
    meanwhile: list = []
    calls = 0

    def slow_check(self, raw_password):
        nonlocal calls
        calls += 1
        if calls == 1:  # other clients' guesses land while the first password is being hashed
            meanwhile.extend(login(APIClient(), spare.email, f"wrong-{i}", program) for i in range(5))
        return check_password(self, raw_password)

    with mock.patch.object(User, "check_password", slow_check):
        first = login(api, spare.email, "wrong-first", program)

    assert_error(first, 401, "INVALID_CREDENTIALS")
    for response in meanwhile[:4]:
        assert_error(response, 401, "INVALID_CREDENTIALS")
    assert_error(meanwhile[4], 429, "TOO_MANY_REQUESTS")
    assert_error(login(api, spare.email, spare.password, program), 429, "TOO_MANY_REQUESTS")


@pytest.fixture
def every_attempt_gets_a_check_slot(settings):
    """The races below are between attempts whose passwords are checked: enough
    password-check slots that none is refused for want of one (429, not an e-mail's failure)."""
    settings.PASSWORD_CHECKS_IN_FLIGHT = 32


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_failures_all_count(consumer_program, every_attempt_gets_a_check_slot):
    program = str(consumer_program.id)
    email = "racer@sandbox.example"
    statuses = run_at_once(8, lambda _: login(APIClient(), email, "wrong-password", program).status_code)

    throttle = LoginThrottle.objects.get(program_id=program, email=email)
    assert sorted(set(statuses)) <= [401, 429] and len(statuses) == 8
    assert throttle.failures == statuses.count(401) >= 5, "every refused password was counted"
    assert throttle.locked_until is not None


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_passwords_cannot_outrun_the_lockout(totp_person, every_attempt_gets_a_check_slot):
    """20 wrong passwords released at once: at most five are checked, the rest are 429."""
    spare, program = totp_person, totp_person.program_id
    count = 20

    def attempt(index: int) -> int:
        return login(APIClient(), spare.email, f"wrong-{index}", program).status_code

    statuses = run_at_once(count, attempt)

    assert len(statuses) == count and set(statuses) <= {401, 429}
    assert statuses.count(401) <= 5, f"{statuses.count(401)} passwords were checked despite the lockout"
    assert statuses.count(429) >= count - 5
    assert_error(login(APIClient(), spare.email, spare.password, program), 429, "TOO_MANY_REQUESTS")


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_right_and_wrong_passwords_never_fail_the_server(
    totp_person, every_attempt_gets_a_check_slot
):
    """A right password clears the counter while wrong ones are creating it: no 500."""
    spare, program = totp_person, totp_person.program_id
    passwords = [spare.password if index % 2 else f"wrong-{index}" for index in range(12)]

    def attempt(index: int) -> int:
        return login(APIClient(), spare.email, passwords[index], program).status_code

    statuses = run_at_once(len(passwords), attempt)

    # (More than five wrong ones may be checked here: each right password clears the count.)
    assert len(statuses) == len(passwords) and set(statuses) <= {200, 401, 429}
