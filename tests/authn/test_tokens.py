"""Bearer tokens as the API sees them: forged, expired,
wrong-use and revoked tokens are all 401 with the error envelope; refresh tokens
rotate and a reused one ends its family; logout ends everything."""

import hashlib
import hmac
import json
from datetime import timedelta

import jwt
import pytest
import time_machine
from cryptography.hazmat.primitives import serialization
from django.utils import timezone

from authn.keys import signing_key
from authn.models import RefreshToken, User
from bankapi.models import Custodian
from bankapi.roles import Role
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
from tests.support.auth import tokens_for
from tests.support.webauthn import b64url

CAPABILITIES = "/v1/capabilities"


@pytest.fixture
def customer_tokens(totp_person, consumer_program):
    return tokens_for(totp_person.email, str(consumer_program.id))


def claims_of(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_alg_none_is_refused(api, customer_tokens):
    forged = jwt.encode(claims_of(customer_tokens.access_token), key=None, algorithm="none")

    assert_error(api.get(CAPABILITIES, **bearer(forged)), 401, "UNAUTHORIZED")


def test_hs256_signed_with_the_public_key_is_refused(api, customer_tokens):
    kid, private_key = signing_key()
    public_pem = private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    # PyJWT will not HMAC with a PEM key, which is the point: forge it by hand.
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    payload = b64url(json.dumps(claims_of(customer_tokens.access_token)).encode())
    signature = b64url(hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest())

    response = api.get(CAPABILITIES, **bearer(f"{header}.{payload}.{signature}"))

    assert_error(response, 401, "UNAUTHORIZED")


def test_an_expired_token_is_refused(api, customer_tokens):
    assert api.get(CAPABILITIES, **bearer(customer_tokens.access_token)).status_code == 200

    with time_machine.travel(timezone.now() + timedelta(minutes=16), tick=False):
        response = api.get(CAPABILITIES, **bearer(customer_tokens.access_token))

    assert_error(response, 401, "UNAUTHORIZED")


def test_a_token_whose_key_is_no_longer_honoured_is_refused(api, customer_tokens, monkeypatch):
    # Verified once (and remembered by this process), then its key is retired.
    assert api.get(CAPABILITIES, **bearer(customer_tokens.access_token)).status_code == 200
    monkeypatch.setattr("authn.tokens.verification_keys", lambda: {})

    assert_error(api.get(CAPABILITIES, **bearer(customer_tokens.access_token)), 401, "UNAUTHORIZED")


def test_the_id_token_is_refused_where_the_access_token_is_needed_and_back(
    api, consumer_program, customer_tokens
):
    program = str(consumer_program.id)

    assert_error(api.get(CAPABILITIES, **bearer(customer_tokens.id_token)), 401, "UNAUTHORIZED")
    start = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=program,
        **bearer(customer_tokens.access_token),
    )
    assert_error(start, 401, "UNAUTHORIZED")
    logout = auth_post(
        api,
        "logout",
        {"access_token": customer_tokens.id_token},
        program=program,
        **bearer(customer_tokens.id_token),
    )
    assert_error(logout, 401, "UNAUTHORIZED")


@pytest.mark.parametrize(
    "authorization",
    ["Bearer garbage", "Bearer a.b.c", "Basic dXNlcjpwYXNz", "Bearer", "Bearer one two"],
)
def test_garbage_authorization_is_refused(api, authorization):
    response = api.get(CAPABILITIES, HTTP_AUTHORIZATION=authorization)

    assert_error(response, 401, "UNAUTHORIZED")


def test_a_missing_token_is_refused(api, consumer_program):
    assert_error(api.get(CAPABILITIES), 401, "UNAUTHORIZED")
    logout = auth_post(api, "logout", {"access_token": "x"}, program=str(consumer_program.id))
    assert_error(logout, 401, "UNAUTHORIZED")


def test_refresh_rotates_and_each_refresh_token_is_good_once(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    first = sign_in_with_totp(api, customer.email, customer.password, customer.totp_secret, program)

    second = tokens_of(auth_post(api, "refresh", {"refresh_token": first["refresh_token"]}, program=program))

    assert second["refresh_token"] != first["refresh_token"]
    assert api.get(CAPABILITIES, **bearer(second["access_token"])).status_code == 200
    third = tokens_of(auth_post(api, "refresh", {"refresh_token": second["refresh_token"]}, program=program))

    reused = auth_post(api, "refresh", {"refresh_token": first["refresh_token"]}, program=program)
    assert_error(reused, 401, "INVALID_CREDENTIALS")
    sibling = auth_post(api, "refresh", {"refresh_token": third["refresh_token"]}, program=program)
    assert_error(sibling, 401, "INVALID_CREDENTIALS")
    assert not RefreshToken.objects.filter(user__email=customer.email, revoked_at__isnull=True).exists()


def test_refresh_through_another_program_or_with_garbage_is_refused(
    api, consumer_program, business_program, customer_tokens
):
    other = auth_post(
        api, "refresh", {"refresh_token": customer_tokens.refresh_token}, program=str(business_program.id)
    )
    assert_error(other, 401, "INVALID_CREDENTIALS")
    garbage = auth_post(api, "refresh", {"refresh_token": "garbage"}, program=str(consumer_program.id))
    assert_error(garbage, 401, "INVALID_CREDENTIALS")

    tokens_of(
        auth_post(
            api,
            "refresh",
            {"refresh_token": customer_tokens.refresh_token},
            program=str(consumer_program.id),
        )
    )


def test_management_refreshes_without_a_program(api, manager):
    management = manager
    tokens = tokens_for(management.email, None)

    refreshed = tokens_of(auth_post(api, "refresh", {"refresh_token": tokens.refresh_token}))

    assert claims_of(refreshed["id_token"])["program"] is None


def test_logout_ends_every_token_of_the_user_on_every_device(api, totp_person, other_totp_person):
    customer, program = totp_person, totp_person.program_id
    phone = tokens_for(customer.email, program)
    laptop = tokens_for(customer.email, program)
    other_customer = tokens_for(other_totp_person.email, program)

    response = auth_post(
        api, "logout", {"access_token": phone.access_token}, program=program, **bearer(phone.access_token)
    )

    assert response.status_code == 200 and response.json() == {"success": True, "data": None}
    for tokens in (phone, laptop):
        assert_error(api.get(CAPABILITIES, **bearer(tokens.access_token)), 401, "UNAUTHORIZED")
        start = auth_post(
            api,
            "passkey/register/start",
            {"friendly_name": "Key"},
            program=program,
            **bearer(tokens.id_token),
        )
        assert_error(start, 401, "UNAUTHORIZED")
        refresh = auth_post(api, "refresh", {"refresh_token": tokens.refresh_token}, program=program)
        assert_error(refresh, 401, "INVALID_CREDENTIALS")
    assert api.get(CAPABILITIES, **bearer(other_customer.access_token)).status_code == 200
    again = auth_post(
        api, "logout", {"access_token": phone.access_token}, program=program, **bearer(phone.access_token)
    )
    assert_error(again, 401, "UNAUTHORIZED")


def test_logout_body_must_name_the_bearer(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    mine = tokens_for(customer.email, program)
    another = tokens_for(customer.email, program)
    version = user(customer.email, program).token_version

    response = auth_post(
        api, "logout", {"access_token": another.access_token}, program=program, **bearer(mine.access_token)
    )

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["errors"][0]["field"] == "access_token"
    assert user(customer.email, program).token_version == version
    assert api.get(CAPABILITIES, **bearer(mine.access_token)).status_code == 200


def test_logout_through_another_program_is_refused(api, totp_person, business_program):
    customer, program = totp_person, totp_person.program_id
    mine = tokens_for(customer.email, program)

    response = auth_post(
        api,
        "logout",
        {"access_token": mine.access_token},
        program=str(business_program.id),
        **bearer(mine.access_token),
    )

    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert api.get(CAPABILITIES, **bearer(mine.access_token)).status_code == 200


def test_management_logs_out_without_a_program(api, manager):
    mine = tokens_for(manager.email, None)

    response = auth_post(api, "logout", {"access_token": mine.access_token}, **bearer(mine.access_token))

    assert response.status_code == 200
    assert_error(auth_post(api, "refresh", {"refresh_token": mine.refresh_token}), 401, "INVALID_CREDENTIALS")


def test_logout_also_ends_sign_ins_still_in_progress(api, totp_person):
    """A session opened before a global logout (here: an unused SOFTWARE_TOKEN_MFA one)
    no longer leads to tokens, even with the right code."""
    customer, program = totp_person, totp_person.program_id
    pending = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
    mine = tokens_for(customer.email, program)

    logout = auth_post(
        api, "logout", {"access_token": mine.access_token}, program=program, **bearer(mine.access_token)
    )

    assert logout.status_code == 200
    finish = auth_post(
        api,
        "verify-2fa",
        {"session_token": pending, "totp_code": totp_now(customer.totp_secret)},
        program=program,
    )
    assert_error(finish, 401, "INVALID_CREDENTIALS")
    fresh = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
    with next_totp_step():
        code = totp_now(customer.totp_secret)
        tokens_of(auth_post(api, "verify-2fa", {"session_token": fresh, "totp_code": code}, program=program))


def test_logout_ends_a_pending_security_setup_session(api, setup_person):
    passkey_user = setup_person
    program = passkey_user.program_id
    pending = challenge_of(
        login(api, passkey_user.email, passkey_user.password, program), "SECURITY_SETUP_REQUIRED"
    )
    mine = tokens_for(passkey_user.email, program)

    auth_post(
        api, "logout", {"access_token": mine.access_token}, program=program, **bearer(mine.access_token)
    )

    refused = auth_post(
        api, "passkey/register/start", {"session_token": pending, "friendly_name": "Key"}, program=program
    )
    assert_error(refused, 401, "INVALID_CREDENTIALS")


@pytest.mark.parametrize(("field", "value"), [("role", Role.CUSTODIAN), ("sandbox", False)])
def test_tokens_issued_before_an_admin_changed_role_or_environment_are_refused(
    api, totp_person, other_totp_person, field, value
):
    customer, program = totp_person, totp_person.program_id
    before = tokens_for(customer.email, program)
    bystander = tokens_for(other_totp_person.email, program)

    # A custodian user needs its custodian (a database constraint).
    party = (
        {"custodian": Custodian.objects.create(program_id=program, sandbox=True, name="Test Custodian")}
        if field == "role"
        else {}
    )
    User.objects.filter(email=customer.email, program_id=program).update(**{field: value}, **party)

    body = assert_error(api.get(CAPABILITIES, **bearer(before.access_token)), 401, "UNAUTHORIZED")
    assert "access_token" not in body
    start = auth_post(
        api, "passkey/register/start", {"friendly_name": "Key"}, program=program, **bearer(before.id_token)
    )
    assert_error(start, 401, "UNAUTHORIZED")
    assert api.get(CAPABILITIES, **bearer(bystander.access_token)).status_code == 200
    after = tokens_for(customer.email, program)
    assert claims_of(after.access_token)[field] == value
    assert api.get(CAPABILITIES, **bearer(after.access_token)).status_code != 401
