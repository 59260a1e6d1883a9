"""Every route that takes a session_token refuses one opened for a user of another
program before checking anything, and spends an attempt only when it checks."""

import pytest

from authn.models import AuthChallenge
from authn.services.challenges import Kind, challenge_create
from tests.authn.helpers import assert_error, auth_post
from tests.support.factories import UserFactory
from tests.support.webauthn import b64url

ASSERTION = {
    "credentialIdB64": b64url(b"credential"),
    "clientDataJSON_B64": b64url(b"{}"),
    "authenticatorDataB64": b64url(b"data"),
    "signatureB64": b64url(b"signature"),
}
ATTESTATION = {
    "credentialIdB64": ASSERTION["credentialIdB64"],
    "clientDataJSON_B64": ASSERTION["clientDataJSON_B64"],
    "attestationObjectB64": b64url(b"object"),
    "transports": [],
}
CHECKING_ROUTES = [
    ("verify-2fa", Kind.SOFTWARE_TOKEN_MFA, {"totp_code": "123456"}),
    ("verify-email", Kind.EMAIL_VERIFICATION_REQUIRED, {"code": "123456"}),
    ("mfa/verify-setup", Kind.MFA_SETUP, {"totp_code": "123456"}),
    ("passkey/register/complete", Kind.PASSKEY_REGISTRATION, {"attestation": ATTESTATION}),
    ("verify-passkey", Kind.PASSKEY_REQUIRED, {"assertion": ASSERTION}),
]


@pytest.mark.parametrize(("route", "kind", "proof"), CHECKING_ROUTES, ids=[r[0] for r in CHECKING_ROUTES])
def test_a_session_is_bound_to_its_users_program(api, consumer_program, business_program, route, kind, proof):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program)
    body = {"session_token": challenge_create(person, kind, secret=b"x" * 32), **proof}
    challenge = AuthChallenge.objects.get(user=person)

    for other in (str(business_program.id), None):
        assert_error(auth_post(api, route, body, program=other), 401, "INVALID_CREDENTIALS")
    challenge.refresh_from_db()
    assert challenge.attempts == 0 and challenge.used_at is None

    wrong_proof = auth_post(api, route, body, program=program)
    assert assert_error(wrong_proof, 401, "INVALID_CREDENTIALS")["retryable"] is True
    challenge.refresh_from_db()
    assert challenge.attempts == 1


@pytest.mark.parametrize(
    ("route", "body"),
    [("mfa/setup", {}), ("passkey/register/start", {"friendly_name": "Key"})],
)
def test_a_setup_session_is_bound_to_its_users_program(api, consumer_program, business_program, route, body):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program)
    session = challenge_create(person, Kind.SECURITY_SETUP_REQUIRED)

    refused = auth_post(api, route, {**body, "session_token": session}, program=str(business_program.id))

    assert_error(refused, 401, "INVALID_CREDENTIALS")
    assert auth_post(api, route, {**body, "session_token": session}, program=program).status_code == 200
