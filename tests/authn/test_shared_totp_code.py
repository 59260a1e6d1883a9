"""A right TOTP code used twice is refused, but it is not a wrong guess.

Two requests may share one code (a double click, a client retrying, a batch
submitted twice): the first spends it, the others answer 401
INVALID_CREDENTIALS and count nothing toward the second-factor lockout, so they
can never lock the user out, whether they come one after another or at once.
"""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle
from tests.authn.helpers import assert_error, tokens_of, totp_now
from tests.authn.test_second_factor_lockout import totp_session, verify_2fa
from tests.authn.test_totp import wrong_code
from tests.conftest import requires_postgres
from tests.support.race import run_at_once


def second_factor_failures(email: str) -> int:
    row = LoginThrottle.objects.filter(factor=LoginThrottle.Factor.SECOND_FACTOR, email=email).first()
    return 0 if row is None else row.failures


def test_a_right_code_sent_again_is_refused_without_counting(api, totp_person):
    person, program = totp_person, totp_person.program_id
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        code = totp_now(person.totp_secret)
        tokens_of(verify_2fa(api, totp_session(api, person, program), code, program))

        for _ in range(9):  # more than the five wrong codes that lock
            again = verify_2fa(api, totp_session(api, person, program), code, program)
            assert_error(again, 401, "INVALID_CREDENTIALS")

        assert second_factor_failures(person.email) == 0

    with time_machine.travel(start + timedelta(seconds=31), tick=False):  # the next code signs in
        tokens_of(verify_2fa(api, totp_session(api, person, program), totp_now(person.totp_secret), program))


def test_wrong_codes_still_count_next_to_a_spent_one(api, totp_person):
    """A spent code neither counts nor clears: four wrong codes, the spent one, then
    a fifth wrong code lock the user."""
    person, program = totp_person, totp_person.program_id
    with time_machine.travel(timezone.now(), tick=False):
        code, bad = totp_now(person.totp_secret), wrong_code(person.totp_secret)
        tokens_of(verify_2fa(api, totp_session(api, person, program), code, program))

        def refused(sent: str) -> None:
            answer = verify_2fa(api, totp_session(api, person, program), sent, program)
            assert_error(answer, 401, "INVALID_CREDENTIALS")

        for _ in range(4):
            refused(bad)
        refused(code)
        assert second_factor_failures(person.email) == 4

        refused(bad)
        locked = verify_2fa(api, totp_session(api, person, program), code, program)
        assert_error(locked, 429, "TOO_MANY_REQUESTS")


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_ten_sign_ins_sharing_one_code_at_once_do_not_lock_the_user(totp_person):
    """Ten verify-2fa requests released together with one right code: one signs in,
    nine are refused, none is 429, and the user can still sign in."""
    person, program = totp_person, totp_person.program_id
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        sessions = [totp_session(APIClient(), person, program) for _ in range(10)]
        code = totp_now(person.totp_secret)

        def attempt(index: int) -> int:
            return verify_2fa(APIClient(), sessions[index], code, program).status_code

        statuses = run_at_once(len(sessions), attempt)

        assert sorted(statuses) == [200] + [401] * 9, statuses
        assert second_factor_failures(person.email) == 0

    with time_machine.travel(start + timedelta(seconds=31), tick=False):
        session = totp_session(APIClient(), person, program)
        tokens_of(verify_2fa(APIClient(), session, totp_now(person.totp_secret), program))
