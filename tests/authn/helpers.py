"""Calls of /v1/auth/* as a client makes them, for the stories in this package."""

from datetime import timedelta

import pyotp
import time_machine
from django.utils import timezone

from authn.models import User


def auth_post(api, route: str, body, *, program: str | None = None, **extra):
    headers = {"HTTP_X_PROGRAM_ID": program} if program else {}
    return api.post(f"/v1/auth/{route}", body, format="json", **headers, **extra)


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def login(api, email: str, password: str, program: str | None):
    return auth_post(api, "login", {"email": email, "password": password}, program=program)


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is False and body["code"] == code and body["message"]
    return body


def challenge_of(response, expected: str) -> str:
    """The session_token of a challenge response of the expected kind."""
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert response.json()["success"] is True
    assert data["authenticated"] is False and data["challenge"] == expected
    assert "access_token" not in data and "refresh_token" not in data
    return data["session_token"]


def tokens_of(response) -> dict:
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["authenticated"] is True and data["token_type"] == "Bearer"
    assert data["expires_in"] == 900
    return data


def totp_now(secret: str) -> str:
    return pyotp.TOTP(secret).now()


def sign_in_with_totp(api, email: str, password: str, secret: str, program: str | None) -> dict:
    session = challenge_of(login(api, email, password, program), "SOFTWARE_TOKEN_MFA")
    response = auth_post(
        api, "verify-2fa", {"session_token": session, "totp_code": totp_now(secret)}, program=program
    )
    return tokens_of(response)


def next_totp_step():
    """Travel past the current 30-second step, so a fresh code may be used again."""
    return time_machine.travel(timezone.now() + timedelta(seconds=31), tick=False)


def user(email: str, program: str | None) -> User:
    return User.objects.get(email=email, program_id=program)
