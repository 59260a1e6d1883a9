"""Admin sign-in: e-mail and password, plus an authenticator code when
ADMIN_REQUIRE_TOTP is on."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyotp
import pytest
from django.test import override_settings

from authn.models import User
from tests.backoffice.conftest import STAFF_PASSWORD, staff_user
from tests.support.factories import PASSWORD

LOGIN = "/admin/login/"
ROOT = Path(__file__).resolve().parents[2]


def _sign_in(client, email: str, password: str, code: str | None = None):
    data = {"username": email, "password": password, "next": "/admin/"}
    if code is not None:
        data["otp_code"] = code
    return client.post(LOGIN, data)


def _enrolled(group: str = "support") -> tuple[User, pyotp.TOTP]:
    user = staff_user(group)
    user.totp_secret = pyotp.random_base32()
    user.totp_confirmed = True
    user.save()
    return user, pyotp.TOTP(user.totp_secret)


@override_settings(ADMIN_REQUIRE_TOTP=False)
def test_without_totp_e_mail_and_password_sign_in(client, db):
    user = staff_user("support")

    page = client.get(LOGIN)
    response = _sign_in(client, user.email.upper(), STAFF_PASSWORD)

    assert page.status_code == 200 and 'name="otp_code"' not in page.content.decode()
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


@override_settings(ADMIN_REQUIRE_TOTP=True)
def test_with_totp_a_current_code_is_needed_and_used_once(client, db):
    user, totp = _enrolled()

    page = client.get(LOGIN)
    missing = _sign_in(client, user.email, STAFF_PASSWORD)
    wrong = _sign_in(client, user.email, STAFF_PASSWORD, "000000" if totp.now() != "000000" else "111111")
    code = totp.now()
    right = _sign_in(client, user.email, STAFF_PASSWORD, code)
    client.logout()
    replayed = _sign_in(client, user.email, STAFF_PASSWORD, code)

    assert 'name="otp_code"' in page.content.decode()
    assert missing.status_code == 200 and "current code of your authenticator" in missing.content.decode()
    assert wrong.status_code == 200
    assert right.status_code == 302
    assert replayed.status_code == 200


@override_settings(ADMIN_REQUIRE_TOTP=True)
def test_staff_without_an_authenticator_enrol_at_first_sign_in(client, db):
    user = staff_user("support")

    first = _sign_in(client, user.email, STAFF_PASSWORD)
    secret = re.search(r'<code id="totp-secret">([A-Z2-7]+)</code>', first.content.decode()).group(1)
    again = _sign_in(client, user.email, STAFF_PASSWORD)
    wrong_password = _sign_in(client, user.email, "Not-The-Password-1", pyotp.TOTP(secret).now())
    enrolled = _sign_in(client, user.email, STAFF_PASSWORD, pyotp.TOTP(secret).now())

    assert first.status_code == 200
    # The same secret until it is confirmed; a wrong password shows none.
    assert secret in again.content.decode()
    assert wrong_password.status_code == 200 and secret not in wrong_password.content.decode()
    assert enrolled.status_code == 302
    user.refresh_from_db()
    assert user.totp_confirmed and user.totp_secret == secret


def test_wrong_passwords_lock_admin_sign_in(client, db):
    user = staff_user("support")

    failures = [_sign_in(client, user.email, f"Wrong-password-{n}") for n in range(5)]
    locked = _sign_in(client, user.email, STAFF_PASSWORD)

    assert [r.status_code for r in failures] == [200] * 5
    assert locked.status_code == 200 and "Too many failed sign-in attempts" in locked.content.decode()
    assert "_auth_user_id" not in client.session


def test_program_users_cannot_sign_in_to_admin(client, payer):
    response = _sign_in(client, payer.email, PASSWORD)
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "False"),
        ({"DATABASE_URL": "postgres://u@127.0.0.1:1/x"}, "True"),
        ({"ADMIN_REQUIRE_TOTP": "off"}, "False"),
    ],
)
def test_totp_is_required_by_default_once_a_database_url_is_set(env, expected):
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "ADMIN_REQUIRE_TOTP"}}
    result = subprocess.run(
        [sys.executable, "-c", "from config import settings; print(settings.ADMIN_REQUIRE_TOTP)"],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == expected, result.stderr
