"""Bad input on every auth route: 400 VALIDATION_ERROR with the envelope, and
nothing changes (no session, no lockout count, no token, no password)."""

import pytest

from authn.models import AuthChallenge, LoginThrottle, PasskeyCredential, RefreshToken, User
from tests.authn.helpers import assert_error, auth_post
from tests.support.auth import tokens_for

ASSERTION = {
    "credentialIdB64": "AAAA",
    "clientDataJSON_B64": "AAAA",
    "authenticatorDataB64": "AAAA",
    "signatureB64": "AAAA",
}
ATTESTATION = {
    "credentialIdB64": "AAAA",
    "clientDataJSON_B64": "AAAA",
    "attestationObjectB64": "AAAA",
    "transports": ["internal"],
}
# A body of the right shape per route; fields listed in OPTIONAL may be left out.
BODIES = {
    "login": {"email": "someone@sandbox.example", "password": "a password"},
    "verify-2fa": {"session_token": "a session", "totp_code": "123456"},
    "change-password": {
        "email": "someone@sandbox.example",
        "temporary_password": "temporary",
        "new_password": "Velvet-Orchard-Compass-81",
    },
    "verify-email": {"session_token": "a session", "code": "123456"},
    "mfa/setup": {"session_token": "a session"},
    "mfa/verify-setup": {"session_token": "a session", "totp_code": "123456"},
    "passkey/register/start": {"friendly_name": "Laptop", "session_token": "a session"},
    "passkey/register/complete": {"session_token": "a session", "attestation": ATTESTATION},
    "verify-passkey": {"session_token": "a session", "assertion": ASSERTION},
    "refresh": {"refresh_token": "a refresh token"},
    "logout": {"access_token": "the bearer"},
}
OPTIONAL = {("mfa/setup", "session_token"), ("passkey/register/start", "session_token")}
ROUTES = list(BODIES)


@pytest.fixture
def call(api, totp_person, consumer_program):
    """POST a route as a customer would; logout with the customer's access token."""
    program = str(consumer_program.id)
    tokens = tokens_for(totp_person.email, program)

    def post(route: str, body=None, *, raw: str | None = None):
        extra = {"HTTP_AUTHORIZATION": f"Bearer {tokens.access_token}"} if route == "logout" else {}
        if raw is not None:
            headers = {"HTTP_X_PROGRAM_ID": program, **extra}
            return api.post(f"/v1/auth/{route}", raw, content_type="application/json", **headers)
        if route == "logout" and isinstance(body, dict) and body.get("access_token") == "the bearer":
            body = {**body, "access_token": tokens.access_token}
        return auth_post(api, route, body, program=program, **extra)

    return post


@pytest.fixture
def unchanged(call):
    """Assert after the test that no auth state moved (snapshot taken once `call` is ready)."""

    def snapshot():
        return (
            AuthChallenge.objects.count(),
            LoginThrottle.objects.count(),
            RefreshToken.objects.filter(revoked_at__isnull=True).count(),
            PasskeyCredential.objects.count(),
            sorted(User.objects.values_list("password", "token_version", "totp_secret", "email_verified")),
        )

    before = snapshot()
    yield
    assert snapshot() == before


def wrong_types():
    for route, body in BODIES.items():
        for field, value in body.items():
            wrong = 123 if isinstance(value, str) else "not an object"
            yield pytest.param(route, field, wrong, id=f"{route}:{field}")
    yield pytest.param(
        "passkey/register/complete", "attestation.transports", "usb", id="transports-not-a-list"
    )
    yield pytest.param("verify-passkey", "assertion.signatureB64", "%%", id="assertion-not-base64url")
    yield pytest.param("verify-2fa", "totp_code", "12345", id="code-not-6-digits")
    yield pytest.param("verify-email", "code", "12a456", id="code-not-digits")
    yield pytest.param("login", "password", "x" * 257, id="oversize-password")


def missing_fields():
    for route, body in BODIES.items():
        for field in body:
            if (route, field) not in OPTIONAL:
                yield pytest.param(route, field, id=f"{route}:{field}")


def with_value(body: dict, dotted: str, value) -> dict:
    head, _, rest = dotted.partition(".")
    if not rest:
        return {**body, head: value}
    return {**body, head: with_value(body[head], rest, value)}


@pytest.mark.parametrize(("route", "field", "value"), list(wrong_types()))
def test_a_field_of_the_wrong_type_is_refused(call, unchanged, route, field, value):
    response = call(route, with_value(BODIES[route], field, value))

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert field in [error["field"] for error in body["errors"]]


@pytest.mark.parametrize(("route", "field"), list(missing_fields()))
def test_a_missing_field_is_refused(call, unchanged, route, field):
    body = {name: value for name, value in BODIES[route].items() if name != field}

    response = call(route, body)

    errors = assert_error(response, 400, "VALIDATION_ERROR")["errors"]
    assert {"field": field, "message": "This field is required."} in errors


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("raw", ['{"email": ', "[1, 2]", '"text"', "42", "null"])
def test_malformed_json_and_non_object_bodies_are_refused(call, unchanged, route, raw):
    response = call(route, raw=raw)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert body["errors"] and body["errors"][0]["field"] == "body"


@pytest.mark.parametrize("route", ROUTES)
def test_program_and_environment_may_not_be_sent_in_the_body(call, unchanged, route):
    response = call(route, {**BODIES[route], "programId": "anything", "sandbox": False})

    fields = {error["field"] for error in assert_error(response, 400, "VALIDATION_ERROR")["errors"]}
    assert fields == {"programId", "sandbox"}
