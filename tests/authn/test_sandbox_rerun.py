"""A rerun of bootstrap_sandbox puts the sandbox users back as its output
promises, whatever clients did with them since: newUser is NEW_PASSWORD_REQUIRED
with the printed temporary password, passkeyUser is SECURITY_SETUP_REQUIRED."""

import io
import json

import pyotp
from django.core.management import call_command

from authn.models import PasskeyCredential
from tests.authn.helpers import assert_error, auth_post, bearer, challenge_of, login, tokens_of, user
from tests.authn.test_passkeys import register
from tests.support.factories_authn import Person
from tests.support.webauthn import SoftwareAuthenticator

NEW_PASSWORD = "Velvet-Orchard-Compass-81"


def rerun_bootstrap() -> dict:
    out = io.StringIO()
    call_command("bootstrap_sandbox", "--json", stdout=out)
    return json.loads(out.getvalue())


def enrol_totp(api, session: str, program: str) -> dict:
    setup = auth_post(api, "mfa/setup", {"session_token": session}, program=program).json()["data"]
    code = pyotp.TOTP(setup["secret"]).now()
    body = {"session_token": setup["session_token"], "totp_code": code}
    return tokens_of(auth_post(api, "mfa/verify-setup", body, program=program))


def test_new_user_is_new_again_after_it_changed_its_password_and_enrolled_totp(api, sandbox):
    printed = rerun_bootstrap()["newUser"]
    email, temporary, program = printed["email"], printed["temporaryPassword"], printed["programId"]
    body = {"email": email, "temporary_password": temporary, "new_password": NEW_PASSWORD}
    session = challenge_of(
        auth_post(api, "change-password", body, program=program), "SECURITY_SETUP_REQUIRED"
    )
    earlier = enrol_totp(api, session, program)
    challenge_of(login(api, email, NEW_PASSWORD, program), "SOFTWARE_TOKEN_MFA")

    again = rerun_bootstrap()

    assert again["newUser"] == printed
    challenge_of(login(api, email, temporary, program), "NEW_PASSWORD_REQUIRED")
    assert_error(login(api, email, NEW_PASSWORD, program), 401, "INVALID_CREDENTIALS")
    assert_error(api.get("/v1/capabilities", **bearer(earlier["access_token"])), 401, "UNAUTHORIZED")
    # And the journey the contract promises works from the start again.
    challenge_of(auth_post(api, "change-password", body, program=program), "SECURITY_SETUP_REQUIRED")


def test_passkey_user_needs_security_setup_again_after_enrolling_a_passkey(api, sandbox):
    printed = rerun_bootstrap()["passkeyUser"]
    email, password, program = printed["email"], printed["password"], printed["programId"]
    register(api, Person(user(email, program), password), SoftwareAuthenticator())
    challenge_of(login(api, email, password, program), "PASSKEY_REQUIRED")

    assert rerun_bootstrap()["passkeyUser"] == printed

    challenge_of(login(api, email, password, program), "SECURITY_SETUP_REQUIRED")
    assert not PasskeyCredential.objects.filter(user__email=email, user__program_id=program).exists()


def test_passkey_user_needs_security_setup_again_after_enrolling_totp(api, sandbox):
    printed = rerun_bootstrap()["passkeyUser"]
    email, password, program = printed["email"], printed["password"], printed["programId"]
    session = challenge_of(login(api, email, password, program), "SECURITY_SETUP_REQUIRED")
    enrol_totp(api, session, program)
    challenge_of(login(api, email, password, program), "SOFTWARE_TOKEN_MFA")

    rerun_bootstrap()

    challenge_of(login(api, email, password, program), "SECURITY_SETUP_REQUIRED")


def test_a_rerun_leaves_untouched_users_and_their_tokens_alone(api, sandbox):
    customer, program = sandbox["customer"], sandbox["consumerProgramId"]
    session = challenge_of(login(api, customer["email"], customer["password"], program), "SOFTWARE_TOKEN_MFA")
    code = pyotp.TOTP(customer["totpSecret"]).now()
    tokens = tokens_of(
        auth_post(api, "verify-2fa", {"session_token": session, "totp_code": code}, program=program)
    )

    again = rerun_bootstrap()

    assert again["customer"]["totpSecret"] == customer["totpSecret"]
    assert api.get("/v1/capabilities", **bearer(tokens["access_token"])).status_code == 200
