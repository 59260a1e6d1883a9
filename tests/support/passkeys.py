"""Enrol a software passkey for a signed-in user, through the registration routes."""

from tests.support.auth import id_header
from tests.support.webauthn import SoftwareAuthenticator


def enrol_passkey(api, email: str, program_id: str, name: str = "Laptop") -> SoftwareAuthenticator:
    """Register a new software authenticator for the user with its id_token; return it."""
    headers = {"HTTP_X_PROGRAM_ID": program_id, **id_header(email, program_id)}
    start = api.post("/v1/auth/passkey/register/start", {"friendly_name": name}, format="json", **headers)
    assert start.status_code == 200, start.content
    options = start.json()["data"]
    authenticator = SoftwareAuthenticator()
    body = {
        "session_token": options["session_token"],
        "attestation": authenticator.create(options["publicKey"]),
    }
    complete = api.post("/v1/auth/passkey/register/complete", body, format="json", **headers)
    assert complete.status_code == 200, complete.content
    return authenticator
