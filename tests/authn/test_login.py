"""POST /v1/auth/login: a correct password answers the user's next challenge,
never tokens."""

import hashlib
import uuid

import jwt
import pyotp
import pytest
from django.core import mail

from authn.models import AuthChallenge, User
from tests.authn.helpers import (
    assert_error,
    auth_post,
    challenge_of,
    login,
    sign_in_with_totp,
    tokens_of,
    totp_now,
    user,
)
from tests.support.auth import id_header
from tests.support.factories import PASSWORD, UserFactory
from tests.support.webauthn import SoftwareAuthenticator


def test_customer_with_totp_is_asked_for_a_code_then_gets_tokens_that_work(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    response = login(api, customer.email, customer.password, program)
    session = challenge_of(response, "SOFTWARE_TOKEN_MFA")
    assert set(response.json()["data"]) == {"authenticated", "challenge", "session_token"}

    response = auth_post(
        api,
        "verify-2fa",
        {"session_token": session, "totp_code": totp_now(customer.totp_secret)},
        program=program,
    )
    tokens = tokens_of(response)
    assert tokens["hasMfa"] is True and tokens["hasPasskey"] is False
    assert set(tokens) == {
        "authenticated",
        "access_token",
        "id_token",
        "refresh_token",
        "token_type",
        "expires_in",
        "hasPasskey",
        "hasMfa",
    }
    claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
    assert claims["program"] == program and claims["token_use"] == "access"
    capabilities = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}")
    assert capabilities.status_code == 200
    assert user(customer.email, program).last_login is not None


def test_session_tokens_are_stored_only_as_their_hash(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    session = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")

    challenge = AuthChallenge.objects.get(user__email=customer.email, used_at__isnull=True)
    assert challenge.token_hash == hashlib.sha256(session.encode()).hexdigest()
    assert not AuthChallenge.objects.filter(token_hash=session).exists()


def test_new_user_with_a_temporary_password_must_change_it(api, new_person):
    new_user = new_person

    response = login(api, new_user.email, new_user.password, new_user.program_id)

    challenge_of(response, "NEW_PASSWORD_REQUIRED")


def test_user_without_a_second_factor_must_set_up_security(api, setup_person):
    passkey_user = setup_person

    response = login(api, passkey_user.email, passkey_user.password, passkey_user.program_id)

    challenge_of(response, "SECURITY_SETUP_REQUIRED")


def test_unverified_email_gets_a_code_by_email_then_security_setup(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program, email_verified=False)

    session = challenge_of(login(api, person.email, PASSWORD, program), "EMAIL_VERIFICATION_REQUIRED")

    assert len(mail.outbox) == 1 and mail.outbox[0].to == [person.email]
    code = next(word for word in mail.outbox[0].body.split() if word.rstrip(".").isdigit()).rstrip(".")
    assert len(code) == 6
    stored = bytes(AuthChallenge.objects.get(user=person, kind="EMAIL_VERIFICATION_REQUIRED").secret)
    assert code.encode() not in stored, "only a keyed hash of the code is stored"

    wrong = "000000" if code != "000000" else "111111"
    refused = auth_post(api, "verify-email", {"session_token": session, "code": wrong}, program=program)
    assert assert_error(refused, 401, "INVALID_CREDENTIALS")["retryable"] is True
    person.refresh_from_db()
    assert person.email_verified is False

    response = auth_post(api, "verify-email", {"session_token": session, "code": code}, program=program)
    challenge_of(response, "SECURITY_SETUP_REQUIRED")
    person.refresh_from_db()
    assert person.email_verified is True

    again = auth_post(api, "verify-email", {"session_token": session, "code": code}, program=program)
    assert_error(again, 401, "INVALID_CREDENTIALS")


def test_unfinished_totp_enrolment_answers_mfa_setup_and_the_app_code_finishes_it(api, consumer_program):
    program = str(consumer_program.id)
    secret = pyotp.random_base32()
    person = UserFactory(program_id=program, totp_secret=secret, totp_confirmed=False)

    session = challenge_of(login(api, person.email, PASSWORD, program), "MFA_SETUP")
    response = auth_post(
        api, "mfa/verify-setup", {"session_token": session, "totp_code": totp_now(secret)}, program=program
    )

    assert tokens_of(response)["hasMfa"] is True
    person.refresh_from_db()
    assert person.totp_confirmed is True


def test_user_with_totp_and_a_passkey_is_still_asked_for_the_totp_code(api, totp_person):
    spare = totp_person
    program = spare.program_id
    authenticator = SoftwareAuthenticator()
    start = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Laptop"},
        program=program,
        **id_header(spare.email, program),
    )
    data = start.json()["data"]
    auth_post(
        api,
        "passkey/register/complete",
        {"session_token": data["session_token"], "attestation": authenticator.create(data["publicKey"])},
        program=program,
    )
    assert user(spare.email, program).passkeys.count() == 1

    response = login(api, spare.email, spare.password, program)

    challenge_of(response, "SOFTWARE_TOKEN_MFA")
    assert "fido2options" not in response.json()["data"]


def test_wrong_email_and_wrong_password_answer_the_same_body(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    wrong_password = login(api, customer.email, "not-the-password", program)
    wrong_email = login(api, "nobody@sandbox.example", "not-the-password", program)

    assert_error(wrong_password, 401, "INVALID_CREDENTIALS")
    assert wrong_password.json() == wrong_email.json()
    assert not AuthChallenge.objects.filter(user__email=customer.email).exists()


@pytest.mark.parametrize("program_key", ["businessProgramId", "unknown", "malformed", "none"])
def test_a_user_signs_in_only_through_its_own_program(api, totp_person, business_program, program_key):
    customer = totp_person
    program = {
        "businessProgramId": str(business_program.id),
        "unknown": str(uuid.uuid4()),
        "malformed": "not-a-uuid",
        "none": None,
    }[program_key]
    reference = login(api, "nobody@sandbox.example", "wrong-password", customer.program_id)

    response = login(api, customer.email, customer.password, program)

    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert response.json() == reference.json()


def test_the_program_may_come_as_the_program_id_query_parameter(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    response = api.post(
        f"/v1/auth/login?programId={program}",
        {"email": customer.email, "password": customer.password},
        format="json",
    )

    challenge_of(response, "SOFTWARE_TOKEN_MFA")


def test_email_is_matched_without_regard_to_case_or_spaces(api, totp_person):
    customer, program = totp_person, totp_person.program_id

    response = login(api, f"  {customer.email.upper()} ", customer.password, program)

    challenge_of(response, "SOFTWARE_TOKEN_MFA")


def test_management_user_signs_in_without_a_program_and_gets_program_less_tokens(
    api, manager, consumer_program
):
    management = manager

    tokens = sign_in_with_totp(api, management.email, management.password, management.totp_secret, None)

    for name in ("access_token", "id_token"):
        claims = jwt.decode(tokens[name], options={"verify_signature": False})
        assert claims["program"] is None and claims["role"] == "management"
    with_program = login(api, management.email, management.password, str(consumer_program.id))
    assert_error(with_program, 401, "INVALID_CREDENTIALS")


def test_inactive_user_cannot_sign_in(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program, is_active=False)

    assert_error(login(api, person.email, PASSWORD, program), 401, "INVALID_CREDENTIALS")
    assert not User.objects.get(id=person.id).challenges.exists()
