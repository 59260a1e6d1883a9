"""Lockout (DESIGN.md section 12): five failed passwords within 15 minutes lock the
(program, e-mail) for 15 minutes, known address or not."""

import threading
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle
from tests.authn.helpers import assert_error, auth_post, challenge_of, login
from tests.conftest import requires_postgres


def fail_five_times(api, email: str, program: str) -> None:
    for _ in range(5):
        assert_error(login(api, email, "wrong-password", program), 401, "INVALID_CREDENTIALS")


def test_five_failures_lock_even_the_right_password_for_fifteen_minutes(api, sandbox):
    customer, program = sandbox["customer"], sandbox["consumerProgramId"]
    start = timezone.now()

    with time_machine.travel(start, tick=False):
        fail_five_times(api, customer["email"], program)
        locked = login(api, customer["email"], customer["password"], program)
        body = assert_error(locked, 429, "TOO_MANY_REQUESTS")
        assert body["retryable"] is True
        assert locked["Retry-After"] == str(15 * 60)

    with time_machine.travel(start + timedelta(minutes=14), tick=False):
        still_locked = login(api, customer["email"], customer["password"], program)
        assert_error(still_locked, 429, "TOO_MANY_REQUESTS")
        assert still_locked["Retry-After"] == str(60)

    with time_machine.travel(start + timedelta(minutes=15, seconds=1), tick=False):
        challenge_of(login(api, customer["email"], customer["password"], program), "SOFTWARE_TOKEN_MFA")


def test_an_unknown_email_locks_exactly_like_a_known_one(api, sandbox):
    program = sandbox["consumerProgramId"]
    customer = sandbox["customer"]

    fail_five_times(api, "nobody@sandbox.example", program)
    fail_five_times(api, customer["email"], program)

    unknown = login(api, "nobody@sandbox.example", "anything", program)
    known = login(api, customer["email"], customer["password"], program)
    assert_error(unknown, 429, "TOO_MANY_REQUESTS")
    assert unknown.json() == known.json()
    assert unknown["Retry-After"] == known["Retry-After"]


def test_failures_older_than_the_window_do_not_add_up(api, sandbox):
    customer, program = sandbox["customer"], sandbox["consumerProgramId"]
    start = timezone.now()

    with time_machine.travel(start, tick=False):
        for _ in range(4):
            login(api, customer["email"], "wrong-password", program)
    with time_machine.travel(start + timedelta(minutes=16), tick=False):
        assert_error(login(api, customer["email"], "wrong-password", program), 401, "INVALID_CREDENTIALS")
        challenge_of(login(api, customer["email"], customer["password"], program), "SOFTWARE_TOKEN_MFA")


def test_a_correct_password_forgets_earlier_failures(api, sandbox):
    customer, program = sandbox["customer"], sandbox["consumerProgramId"]

    for _ in range(4):
        login(api, customer["email"], "wrong-password", program)
    challenge_of(login(api, customer["email"], customer["password"], program), "SOFTWARE_TOKEN_MFA")
    for _ in range(4):
        login(api, customer["email"], "wrong-password", program)

    challenge_of(login(api, customer["email"], customer["password"], program), "SOFTWARE_TOKEN_MFA")


def test_the_lock_is_per_program(api, sandbox):
    customer = sandbox["customer"]
    fail_five_times(api, customer["email"], sandbox["businessProgramId"])

    challenge_of(
        login(api, customer["email"], customer["password"], sandbox["consumerProgramId"]),
        "SOFTWARE_TOKEN_MFA",
    )


def test_wrong_temporary_passwords_on_change_password_count_too(api, sandbox):
    new_user = sandbox["newUser"]
    program = new_user["programId"]
    for _ in range(5):
        response = auth_post(
            api,
            "change-password",
            {
                "email": new_user["email"],
                "temporary_password": "wrong",
                "new_password": "Brand-New-Passphrase-7",
            },
            program=program,
        )
        assert_error(response, 401, "INVALID_CREDENTIALS")

    assert_error(
        login(api, new_user["email"], new_user["temporaryPassword"], program), 429, "TOO_MANY_REQUESTS"
    )


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_failures_all_count(sandbox):
    program = sandbox["consumerProgramId"]
    email = "racer@sandbox.example"
    barrier = threading.Barrier(8)
    statuses: list[int] = []

    def attempt():
        try:
            barrier.wait()
            statuses.append(login(APIClient(), email, "wrong-password", program).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    throttle = LoginThrottle.objects.get(program_id=program, email=email)
    assert sorted(set(statuses)) <= [401, 429] and len(statuses) == 8
    assert throttle.failures == statuses.count(401) >= 5, "every refused password was counted"
    assert throttle.locked_until is not None
