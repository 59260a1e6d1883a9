"""Passkeys end to end with a software authenticator: registration,
PASSKEY_REQUIRED sign-in (verify-passkey) and the refusals that stop forgeries
and replays."""

import base64
import uuid

import cbor2
import pytest
from django.test import override_settings

from authn.models import PasskeyCredential
from authn.serializers import passkey_assertion_of
from authn.services.challenges import CredentialRejected
from authn.services.passkeys import PasskeyAssertion, passkey_assertion_options, passkey_assertion_verify
from tests.authn.helpers import assert_error, auth_post, bearer, challenge_of, login, tokens_of, user
from tests.support.auth import access_header, id_header
from tests.support.factories_authn import Person
from tests.support.single_line import LINE_BREAKING, with_inside
from tests.support.webauthn import SoftwareAuthenticator, b64url, unb64url


def start_from_security_setup(api, passkey_user: Person) -> tuple[dict, str]:
    """The registration options a user with no second factor gets from its security setup session."""
    program = passkey_user.program_id
    session = challenge_of(
        login(api, passkey_user.email, passkey_user.password, program), "SECURITY_SETUP_REQUIRED"
    )
    response = auth_post(
        api, "passkey/register/start", {"friendly_name": "Phone", "session_token": session}, program=program
    )
    assert response.status_code == 200, response.content
    return response.json()["data"], program


def complete(api, session_token: str, attestation: dict, program: str):
    body = {"session_token": session_token, "attestation": attestation}
    return auth_post(api, "passkey/register/complete", body, program=program)


def register(api, passkey_user: Person, authenticator: SoftwareAuthenticator) -> str:
    data, program = start_from_security_setup(api, passkey_user)
    response = complete(api, data["session_token"], authenticator.create(data["publicKey"]), program)
    assert response.status_code == 200, response.content
    return program


def passkey_login(api, passkey_user: Person) -> dict:
    response = login(api, passkey_user.email, passkey_user.password, passkey_user.program_id)
    challenge_of(response, "PASSKEY_REQUIRED")
    return response.json()["data"]


def verify(api, session_token: str, assertion: dict, program: str):
    body = {"session_token": session_token, "assertion": assertion}
    return auth_post(api, "verify-passkey", body, program=program)


def test_security_setup_with_a_passkey_then_passkey_sign_in(api, setup_person):
    passkey_user = setup_person
    authenticator = SoftwareAuthenticator()
    data, program = start_from_security_setup(api, setup_person)

    options = data["publicKey"]
    assert options["rp"] == {"id": "localhost", "name": "Bank API"}
    stored_user = user(passkey_user.email, program)
    assert unb64url(options["user"]["id"]) == stored_user.id.bytes
    assert options["user"]["name"] == passkey_user.email
    assert "=" not in options["challenge"] and len(unb64url(options["challenge"])) >= 32
    assert {"type": "public-key", "alg": -7} in options["pubKeyCredParams"]
    assert options["timeout"] == 300_000 and options["attestation"] == "none"

    response = complete(api, data["session_token"], authenticator.create(options), program)

    result = tokens_of(response)
    assert result["credentialId"] == authenticator.credential_id_b64 and result["createdAt"]
    assert result["hasPasskey"] is True and result["hasMfa"] is False
    passkey = PasskeyCredential.objects.get(user=stored_user)
    assert bytes(passkey.credential_id) == authenticator.credential_id
    assert passkey.friendly_name == "Phone" and passkey.transports == ["internal"]

    challenge = passkey_login(api, setup_person)
    fido2options = challenge["fido2options"]
    assert set(fido2options) == {"challenge", "timeout", "rpId", "userVerification", "allowCredentials"}
    assert fido2options["rpId"] == "localhost" and "=" not in fido2options["challenge"]
    assert fido2options["allowCredentials"] == [{"type": "public-key", "id": authenticator.credential_id_b64}]

    signed_in = verify(api, challenge["session_token"], authenticator.get(fido2options), program)

    assert tokens_of(signed_in)["hasPasskey"] is True
    passkey.refresh_from_db()
    assert passkey.sign_count == 1 and passkey.last_used_at is not None


def test_a_signed_in_user_adds_a_passkey_with_the_id_token(api, totp_person):
    customer, program = totp_person, totp_person.program_id
    authenticator = SoftwareAuthenticator()

    start = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=program,
        **id_header(customer.email, program),
    )
    data = start.json()["data"]
    response = complete(api, data["session_token"], authenticator.create(data["publicKey"]), program)

    assert response.status_code == 200, response.content
    assert set(response.json()["data"]) == {"credentialId", "createdAt"}, "no tokens: this was no sign-in"
    again = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=program,
        **id_header(customer.email, program),
    )
    assert again.json()["data"]["publicKey"]["excludeCredentials"] == [
        {"type": "public-key", "id": authenticator.credential_id_b64}
    ]


def test_registration_start_refuses_the_access_token_and_a_missing_proof(api, totp_person, business_program):
    customer, program = totp_person, totp_person.program_id

    with_access = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=program,
        **access_header(customer.email, program),
    )
    assert_error(with_access, 401, "UNAUTHORIZED")
    assert_error(
        auth_post(api, "passkey/register/start", {"friendly_name": "Key"}, program=program),
        401,
        "UNAUTHORIZED",
    )
    mfa_session = challenge_of(login(api, customer.email, customer.password, program), "SOFTWARE_TOKEN_MFA")
    wrong_kind = auth_post(
        api, "passkey/register/start", {"friendly_name": "Key", "session_token": mfa_session}, program=program
    )
    assert_error(wrong_kind, 401, "INVALID_CREDENTIALS")
    other_program = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=str(business_program.id),
        **id_header(customer.email, program),
    )
    assert_error(other_program, 401, "INVALID_CREDENTIALS")


def tamper_with_fmt(attestation: dict) -> dict:
    """Claim a `packed` self-attestation whose signature is garbage."""
    decoded = cbor2.loads(unb64url(attestation["attestationObjectB64"]))
    decoded["fmt"] = "packed"
    decoded["attStmt"] = {"alg": -7, "sig": b"\x30\x06\x02\x01\x01\x02\x01\x01"}
    return {**attestation, "attestationObjectB64": b64url(cbor2.dumps(decoded))}


def tamper_with_challenge(attestation: dict) -> dict:
    client_data = unb64url(attestation["clientDataJSON_B64"]).replace(
        b'"challenge": "', b'"challenge": "AAAA'
    )
    return {**attestation, "clientDataJSON_B64": b64url(client_data)}


def tamper_with_public_key(attestation: dict) -> dict:
    """Replace the attested COSE key (after rpIdHash, flags, count, aaguid, id) with a bare number."""
    decoded = cbor2.loads(unb64url(attestation["attestationObjectB64"]))
    key_offset = 32 + 1 + 4 + 16 + 2 + len(unb64url(attestation["credentialIdB64"]))
    decoded["authData"] = decoded["authData"][:key_offset] + cbor2.dumps(5)
    return {**attestation, "attestationObjectB64": b64url(cbor2.dumps(decoded))}


def other_credential_id(attestation: dict) -> dict:
    return {**attestation, "credentialIdB64": b64url(b"another credential id")}


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda a, o: tamper_with_fmt(a.create(o)), id="tampered-attestation-statement"),
        pytest.param(lambda a, o: tamper_with_challenge(a.create(o)), id="tampered-client-data"),
        pytest.param(lambda a, o: tamper_with_public_key(a.create(o)), id="tampered-public-key"),
        pytest.param(lambda a, o: other_credential_id(a.create(o)), id="credential-id-not-attested"),
        pytest.param(lambda a, o: a.create(o, origin="https://evil.example"), id="wrong-origin"),
        pytest.param(lambda a, o: a.create(o, rp_id="evil.example"), id="wrong-rp-id"),
    ],
)
def test_a_forged_registration_is_refused_and_nothing_is_stored(api, setup_person, forge):
    authenticator = SoftwareAuthenticator()
    data, program = start_from_security_setup(api, setup_person)

    response = complete(api, data["session_token"], forge(authenticator, data["publicKey"]), program)

    body = assert_error(response, 401, "INVALID_CREDENTIALS")
    assert body["retryable"] is True
    assert not PasskeyCredential.objects.exists()
    honest = complete(api, data["session_token"], authenticator.create(data["publicKey"]), program)
    assert honest.status_code == 200, "a refused ceremony may be run again with the same session"


def test_registration_with_an_origin_of_the_configured_list_is_accepted(api, setup_person):
    with override_settings(WEBAUTHN_ORIGINS=["http://localhost:8000", "https://app.example"]):
        data, program = start_from_security_setup(api, setup_person)
        attestation = SoftwareAuthenticator(origin="https://app.example").create(data["publicKey"])
        response = complete(api, data["session_token"], attestation, program)

    assert response.status_code == 200, response.content


def test_a_registration_session_is_single_use(api, setup_person):
    data, program = start_from_security_setup(api, setup_person)
    assert (
        complete(
            api, data["session_token"], SoftwareAuthenticator().create(data["publicKey"]), program
        ).status_code
        == 200
    )

    again = complete(api, data["session_token"], SoftwareAuthenticator().create(data["publicKey"]), program)

    assert_error(again, 401, "INVALID_CREDENTIALS")
    assert PasskeyCredential.objects.count() == 1


def test_a_replayed_assertion_is_refused(api, setup_person):
    authenticator = SoftwareAuthenticator()
    program = register(api, setup_person, authenticator)
    first = passkey_login(api, setup_person)
    assertion = authenticator.get(first["fido2options"])
    tokens_of(verify(api, first["session_token"], assertion, program))

    same_session = verify(api, first["session_token"], assertion, program)
    assert_error(same_session, 401, "INVALID_CREDENTIALS")

    second = passkey_login(api, setup_person)
    old_challenge = verify(api, second["session_token"], assertion, program)
    assert_error(old_challenge, 401, "INVALID_CREDENTIALS")

    stale_count = authenticator.get(second["fido2options"], sign_count=authenticator.sign_count)
    refused = verify(api, second["session_token"], stale_count, program)
    assert assert_error(refused, 401, "INVALID_CREDENTIALS")["retryable"] is True

    tokens_of(verify(api, second["session_token"], authenticator.get(second["fido2options"]), program))


def test_an_authenticator_without_a_counter_still_signs_in_once_per_challenge(api, setup_person):
    authenticator = SoftwareAuthenticator(counts=False)
    program = register(api, setup_person, authenticator)

    for _ in range(2):
        challenge = passkey_login(api, setup_person)
        tokens_of(
            verify(api, challenge["session_token"], authenticator.get(challenge["fido2options"]), program)
        )


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda a, o: a.get(o, origin="https://evil.example"), id="wrong-origin"),
        pytest.param(lambda a, o: a.get(o, rp_id="evil.example"), id="wrong-rp-id"),
        pytest.param(lambda a, o: SoftwareAuthenticator().get(o), id="unknown-credential"),
        pytest.param(
            lambda a, o: {**a.get(o), "signatureB64": b64url(b"\x30\x06\x02\x01\x01\x02\x01\x01")},
            id="bad-signature",
        ),
        pytest.param(
            lambda a, o: {**a.get(o), "userHandleB64": b64url(uuid.uuid4().bytes)}, id="other-user-handle"
        ),
    ],
)
def test_a_forged_assertion_is_refused(api, setup_person, forge):
    authenticator = SoftwareAuthenticator()
    program = register(api, setup_person, authenticator)
    challenge = passkey_login(api, setup_person)

    response = verify(
        api, challenge["session_token"], forge(authenticator, challenge["fido2options"]), program
    )

    assert assert_error(response, 401, "INVALID_CREDENTIALS")["retryable"] is True


def test_another_users_passkey_cannot_answer(api, totp_person, setup_person):
    spare, program = totp_person, totp_person.program_id
    theirs = SoftwareAuthenticator()
    start = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=program,
        **id_header(spare.email, program),
    )
    data = start.json()["data"]
    assert complete(api, data["session_token"], theirs.create(data["publicKey"]), program).status_code == 200
    register(api, setup_person, SoftwareAuthenticator())
    challenge = passkey_login(api, setup_person)

    assertion = theirs.get(challenge["fido2options"])
    del assertion["userHandleB64"]
    response = verify(api, challenge["session_token"], assertion, program)

    assert_error(response, 401, "INVALID_CREDENTIALS")


def test_malformed_base64url_is_bad_input_not_a_failed_ceremony(api, setup_person):
    data, program = start_from_security_setup(api, setup_person)
    attestation = SoftwareAuthenticator().create(data["publicKey"])

    response = complete(
        api, data["session_token"], {**attestation, "attestationObjectB64": "not base64url!"}, program
    )

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["errors"][0]["field"] == "attestation.attestationObjectB64"
    assert complete(api, data["session_token"], attestation, program).status_code == 200, (
        "the session was not spent"
    )


def test_step_up_options_and_verification_for_other_apps(api, setup_person):
    authenticator = SoftwareAuthenticator()
    register(api, setup_person, authenticator)
    holder = user(setup_person.email, setup_person.program_id)

    challenge, options = passkey_assertion_options(holder)

    assert base64.urlsafe_b64decode(options["challenge"] + "==") == challenge
    passkey = passkey_assertion_verify(holder, challenge, passkey_assertion_of(authenticator.get(options)))
    assert bytes(passkey.credential_id) == authenticator.credential_id
    with pytest.raises(CredentialRejected):
        passkey_assertion_verify(
            holder,
            challenge,
            PasskeyAssertion(credential_id="%%%", client_data_json="", authenticator_data="", signature=""),
        )


def test_bearer_garbage_on_registration_start_is_unauthorized(api, consumer_program):
    response = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=str(consumer_program.id),
        **bearer("x.y.z"),
    )

    assert_error(response, 401, "UNAUTHORIZED")


def test_registration_complete_takes_no_bearer_but_refuses_another_users(api, totp_person, other_totp_person):
    customer, program = totp_person, totp_person.program_id
    start = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": "Key"},
        program=program,
        **id_header(customer.email, program),
    )
    data = start.json()["data"]
    attestation = SoftwareAuthenticator().create(data["publicKey"])
    body = {"session_token": data["session_token"], "attestation": attestation}

    others = auth_post(
        api,
        "passkey/register/complete",
        body,
        program=program,
        **id_header(other_totp_person.email, program),
    )
    assert_error(others, 401, "UNAUTHORIZED")
    access = auth_post(
        api, "passkey/register/complete", body, program=program, **access_header(customer.email, program)
    )
    assert_error(access, 401, "UNAUTHORIZED")
    assert not PasskeyCredential.objects.exists()

    own = auth_post(
        api, "passkey/register/complete", body, program=program, **id_header(customer.email, program)
    )
    assert own.status_code == 200, own.content


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
def test_a_passkey_name_is_single_line_text(api, totp_person, character):
    program = totp_person.program_id
    response = auth_post(
        api,
        "passkey/register/start",
        {"friendly_name": with_inside("Work laptop", character)},
        program=program,
        **id_header(totp_person.email, program),
    )

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert [error["field"] for error in body["errors"]] == ["friendly_name"]
