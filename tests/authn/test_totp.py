"""TOTP: verify-2fa, enrolment (mfa/setup, mfa/verify-setup) and the step-up check."""

from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pyotp
import pytest
import time_machine
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import User
from authn.services.totp import totp_verify
from tests.authn.helpers import (
    assert_error,
    auth_post,
    bearer,
    challenge_of,
    login,
    next_totp_step,
    sign_in_with_totp,
    tokens_of,
    totp_now,
    user,
)
from tests.conftest import requires_postgres
from tests.support.auth import access_header, id_header
from tests.support.factories import PASSWORD, UserFactory
from tests.support.factories_authn import Person
from tests.support.race import run_at_once


def wrong_code(secret: str) -> str:
    totp = pyotp.TOTP(secret)
    valid = {totp.at(timezone.now(), counter_offset=offset) for offset in (-1, 0, 1)}
    return next(code for code in ("000000", "111111", "222222", "333333") if code not in valid)


def customer_session(api, customer: Person) -> tuple[str, str, str]:
    program = customer.program_id
    session = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
    return session, customer.totp_secret, program


def test_a_code_is_accepted_once(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    with time_machine.travel(timezone.now(), tick=False):
        code = totp_now(customer.totp_secret)
        first = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
        second = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")

        tokens_of(auth_post(api, "verify-2fa", {"session_token": first, "totp_code": code}, program=program))
        replay = auth_post(api, "verify-2fa", {"session_token": second, "totp_code": code}, program=program)

        assert_error(replay, 401, "INVALID_CREDENTIALS")
        with next_totp_step():
            fresh = totp_now(customer.totp_secret)
            tokens_of(
                auth_post(api, "verify-2fa", {"session_token": second, "totp_code": fresh}, program=program)
            )


def test_a_code_of_the_previous_step_is_accepted_one_of_two_steps_back_is_not(api, totp_person):
    session, secret, program = customer_session(api, totp_person)
    totp = pyotp.TOTP(secret)
    # The clock stands still: a step boundary crossed between making the codes
    # and checking them would turn "one step back" into "two steps back".
    with time_machine.travel(timezone.now(), tick=False):
        now = timezone.now()
        stale = auth_post(
            api,
            "verify-2fa",
            {"session_token": session, "totp_code": totp.at(now - timedelta(seconds=60))},
            program=program,
        )
        assert_error(stale, 401, "INVALID_CREDENTIALS")
        drifted = auth_post(
            api,
            "verify-2fa",
            {"session_token": session, "totp_code": totp.at(now - timedelta(seconds=30))},
            program=program,
        )
        tokens_of(drifted)


def test_a_wrong_code_is_retryable_and_the_session_survives(api, totp_person):
    session, secret, program = customer_session(api, totp_person)

    refused = auth_post(
        api, "verify-2fa", {"session_token": session, "totp_code": wrong_code(secret)}, program=program
    )
    assert assert_error(refused, 401, "INVALID_CREDENTIALS")["retryable"] is True

    tokens_of(
        auth_post(
            api, "verify-2fa", {"session_token": session, "totp_code": totp_now(secret)}, program=program
        )
    )


def test_five_wrong_codes_burn_the_session(api, totp_person):
    session, secret, program = customer_session(api, totp_person)
    bad = wrong_code(secret)

    answers = [
        auth_post(api, "verify-2fa", {"session_token": session, "totp_code": bad}, program=program)
        for _ in range(5)
    ]

    assert [assert_error(a, 401, "INVALID_CREDENTIALS")["retryable"] for a in answers] == [True] * 4 + [False]
    burned = auth_post(
        api, "verify-2fa", {"session_token": session, "totp_code": totp_now(secret)}, program=program
    )
    assert assert_error(burned, 401, "INVALID_CREDENTIALS")["retryable"] is False


def test_a_session_is_single_use(api, totp_person):
    session, secret, program = customer_session(api, totp_person)
    tokens_of(
        auth_post(
            api, "verify-2fa", {"session_token": session, "totp_code": totp_now(secret)}, program=program
        )
    )

    with next_totp_step():
        again = auth_post(
            api, "verify-2fa", {"session_token": session, "totp_code": totp_now(secret)}, program=program
        )
    assert_error(again, 401, "INVALID_CREDENTIALS")


def test_an_expired_session_is_refused(api, totp_person):
    session, secret, program = customer_session(api, totp_person)

    with time_machine.travel(timezone.now() + timedelta(minutes=5, seconds=1), tick=False):
        response = auth_post(
            api, "verify-2fa", {"session_token": session, "totp_code": totp_now(secret)}, program=program
        )

    assert_error(response, 401, "INVALID_CREDENTIALS")


def test_a_session_of_another_kind_is_refused(api, setup_person):
    passkey_user = setup_person
    program = passkey_user.program_id
    session = challenge_of(
        login(api, passkey_user.email, passkey_user.password, program), "SECURITY_SETUP_REQUIRED"
    )

    response = auth_post(
        api, "verify-2fa", {"session_token": session, "totp_code": "123456"}, program=program
    )

    assert_error(response, 401, "INVALID_CREDENTIALS")


@pytest.mark.parametrize("other_program", ["businessProgramId", None])
def test_a_session_is_refused_through_another_program(api, totp_person, business_program, other_program):
    session, secret, program = customer_session(api, totp_person)
    body = {"session_token": session, "totp_code": totp_now(secret)}

    response = auth_post(
        api, "verify-2fa", body, program={"businessProgramId": str(business_program.id)}.get(other_program)
    )

    assert_error(response, 401, "INVALID_CREDENTIALS")
    tokens_of(auth_post(api, "verify-2fa", body, program=program))


def test_totp_enrolment_from_security_setup_ends_in_tokens(api, setup_person):
    passkey_user = setup_person
    program = passkey_user.program_id
    session = challenge_of(
        login(api, passkey_user.email, passkey_user.password, program), "SECURITY_SETUP_REQUIRED"
    )

    setup = auth_post(api, "mfa/setup", {"session_token": session}, program=program)

    assert setup.status_code == 200, setup.content
    data = setup.json()["data"]
    assert set(data) == {"secret", "otpauthUri", "session_token"}
    uri = urlparse(data["otpauthUri"])
    assert uri.scheme == "otpauth" and parse_qs(uri.query)["secret"] == [data["secret"]]
    stored = user(passkey_user.email, program)
    assert stored.totp_secret == data["secret"] and stored.totp_confirmed is False
    with connection.cursor() as cursor:
        cursor.execute("SELECT totp_secret FROM authn_user WHERE id = %s", [stored.id.hex])
        assert data["secret"] not in cursor.fetchone()[0], "the secret is encrypted at rest"

    reused = auth_post(api, "mfa/setup", {"session_token": session}, program=program)
    assert_error(reused, 401, "INVALID_CREDENTIALS")

    refused = auth_post(
        api,
        "mfa/verify-setup",
        {"session_token": data["session_token"], "totp_code": wrong_code(data["secret"])},
        program=program,
    )
    assert assert_error(refused, 401, "INVALID_CREDENTIALS")["retryable"] is True
    confirmed = auth_post(
        api,
        "mfa/verify-setup",
        {"session_token": data["session_token"], "totp_code": totp_now(data["secret"])},
        program=program,
    )
    assert tokens_of(confirmed)["hasMfa"] is True

    with next_totp_step():
        sign_in_with_totp(api, passkey_user.email, passkey_user.password, data["secret"], program)


def test_totp_enrolment_with_the_id_token(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program)

    setup = auth_post(api, "mfa/setup", {}, program=program, **id_header(person.email, program))

    data = setup.json()["data"]
    session = challenge_of(login(api, person.email, PASSWORD, program), "MFA_SETUP")
    tokens_of(
        auth_post(
            api,
            "mfa/verify-setup",
            {"session_token": session, "totp_code": totp_now(data["secret"])},
            program=program,
        )
    )


def test_mfa_setup_needs_a_setup_session_or_the_id_token(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    person = UserFactory(program_id=program)

    assert_error(auth_post(api, "mfa/setup", {}, program=program), 401, "UNAUTHORIZED")
    with_access_token = auth_post(
        api, "mfa/setup", {}, program=program, **access_header(person.email, program)
    )
    assert_error(with_access_token, 401, "UNAUTHORIZED")
    mfa_session, _, _ = customer_session(api, customer)
    wrong_kind = auth_post(api, "mfa/setup", {"session_token": mfa_session}, program=program)
    assert_error(wrong_kind, 401, "INVALID_CREDENTIALS")
    with_garbage = auth_post(api, "mfa/setup", {}, program=program, **bearer("garbage"))
    assert_error(with_garbage, 401, "UNAUTHORIZED")
    assert not User.objects.get(id=person.id).totp_secret
    assert user(customer.email, program).totp_secret == customer.totp_secret


def test_confirmed_totp_cannot_be_replaced(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    response = auth_post(api, "mfa/setup", {}, program=program, **id_header(customer.email, program))

    assert_error(response, 409, "INVALID_STATE")
    assert user(customer.email, program).totp_secret == customer.totp_secret


def test_step_up_totp_verify_spends_the_code(totp_person, consumer_program):
    customer = totp_person
    holder = user(customer.email, str(consumer_program.id))
    with time_machine.travel(timezone.now(), tick=False):
        code = totp_now(customer.totp_secret)

        assert totp_verify(holder, code) is True
        assert totp_verify(holder, code) is False
        assert totp_verify(holder, wrong_code(customer.totp_secret)) is False

    unconfirmed = UserFactory(program_id=str(consumer_program.id), totp_secret=pyotp.random_base32())
    assert totp_verify(unconfirmed, totp_now(unconfirmed.totp_secret)) is False


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_requests_racing_with_one_code_cannot_both_pass(totp_person):
    customer, program = totp_person, totp_person.program_id
    client = APIClient()
    # Five contenders: a sixth would meet the per-user second-factor lockout (429)
    # rather than the spent code this test is about.
    sessions = [
        challenge_of(login(client, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
        for _ in range(5)
    ]
    code = totp_now(customer.totp_secret)

    def verify(index: int) -> int:
        body = {"session_token": sessions[index], "totp_code": code}
        return auth_post(APIClient(), "verify-2fa", body, program=program).status_code

    statuses = run_at_once(len(sessions), verify)

    assert sorted(statuses) == [200] + [401] * 4
