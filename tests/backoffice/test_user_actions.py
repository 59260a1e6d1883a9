"""Support resets passwords and lifts lockouts; administrators sign users out
everywhere. Each through the admin, each in the admin log."""

from django.contrib.admin.models import LogEntry
from django.utils import timezone

from authn.models import LoginThrottle, RefreshToken, User
from authn.tokens import tokens_issue
from tests.support.factories import PASSWORD, customer_user

URL = "/admin/authn/user/"


def _run(client, action: str, users):
    return client.post(URL, {"action": action, "index": "0", "_selected_action": [str(u.id) for u in users]})


def _login(api, user: User, password: str):
    return api.post(
        "/v1/auth/login",
        {"email": user.email, "password": password},
        format="json",
        HTTP_X_PROGRAM_ID=str(user.program_id),
    )


def _lock(user: User) -> None:
    LoginThrottle.objects.create(
        program=user.program,
        email=user.email,
        window_started_at=timezone.now(),
        failures=5,
        locked_until=timezone.now() + timezone.timedelta(minutes=15),
    )


def _messages(response) -> list[str]:
    return [str(m) for m in response.wsgi_request._messages]


def test_support_resets_a_password_to_a_temporary_one(staff_client, program, api):
    user = customer_user(program).user
    old = tokens_issue(user)
    client = staff_client("support")

    response = _run(client, "reset_password", [user])

    assert response.status_code == 302
    (shown,) = [m for m in _messages(response) if m.startswith("Temporary password for")]
    temporary = shown.split(": ", 1)[1].split(" ")[0]
    user.refresh_from_db()
    assert user.must_change_password and user.check_password(temporary)
    # The old password no longer works; the temporary one asks for a new password.
    refused = _login(api, user, PASSWORD)
    challenge = _login(api, user, temporary)
    assert refused.status_code == 401
    assert challenge.status_code == 200
    assert challenge.json()["data"]["challenge"] == "NEW_PASSWORD_REQUIRED"
    # Every earlier token ended.
    me = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {old.access_token}")
    assert me.status_code == 401
    (entry,) = LogEntry.objects.filter(object_id=str(user.id))
    assert "temporary" in entry.get_change_message() and temporary not in entry.get_change_message()


def test_support_unlocks_a_locked_user(staff_client, customer2, api):
    user = customer2.user
    _lock(user)
    locked = _login(api, user, PASSWORD)
    client = staff_client("support")

    listed = client.get(URL, {"locked": "yes"})
    response = _run(client, "unlock", [user])
    after = _login(api, user, PASSWORD)

    assert locked.status_code == 429
    assert listed.status_code == 200 and user.email in listed.content.decode()
    assert response.status_code == 302
    assert after.status_code == 200 and after.json()["data"]["challenge"] == "SOFTWARE_TOKEN_MFA"
    assert not LoginThrottle.objects.filter(email=user.email).exists()
    assert LogEntry.objects.filter(object_id=str(user.id), change_message__contains="Unlocked").exists()


def test_administrator_signs_a_user_out_everywhere(staff_client, payer, api):
    user = payer.user
    tokens = tokens_issue(user)
    client = staff_client("administrator")

    response = _run(client, "sign_out_everywhere", [user])

    assert response.status_code == 302
    refused = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {tokens.access_token}")
    assert refused.status_code == 401
    assert not RefreshToken.objects.filter(user=user, revoked_at__isnull=True).exists()
    assert LogEntry.objects.filter(object_id=str(user.id), change_message="Signed out everywhere").exists()


def test_wrong_groups_cannot_run_user_actions(staff_client, customer2, api):
    user = customer2.user
    _lock(user)
    before = (user.password, user.token_version)
    cases = [("compliance", "reset_password"), ("operations", "unlock"), ("support", "sign_out_everywhere")]
    for group, action in cases:
        client = staff_client(group)
        page = client.get(URL)
        response = _run(client, action, [user])
        assert page.status_code == 200 and action.encode() not in page.content
        assert response.status_code in (200, 302)
        client.logout()

    user.refresh_from_db()
    assert (user.password, user.token_version) == before
    assert LoginThrottle.objects.filter(email=user.email).exists()
    assert not LogEntry.objects.filter(object_id=str(user.id)).exists()


def test_support_sees_users_but_cannot_edit_them(staff_client, payer):
    user, email = payer.user, payer.email
    client = staff_client("support")

    page = client.get(f"{URL}{user.id}/change/")
    edit = client.post(f"{URL}{user.id}/change/", {"email": "taken@example.com", "role": "customer"})

    assert page.status_code == 200
    assert edit.status_code == 403
    user.refresh_from_db()
    assert user.email == email


def test_no_secret_is_shown_on_a_user_page(staff_client, payer):
    user = payer.user
    client = staff_client("administrator")

    body = client.get(f"{URL}{user.id}/change/").content.decode()

    assert user.totp_secret and user.totp_secret not in body
    assert user.password not in body and "argon2" not in body


def test_users_are_found_by_their_e_mail_whole_or_in_part(staff_client, program):
    email = customer_user(program, email="customer1@example.test").email
    other = customer_user(program, email="someone.else@example.test").email
    client = staff_client("support")

    found = client.get(URL, {"q": email.upper()})
    partial = client.get(URL, {"q": "customer1@"})
    elsewhere = client.get(URL, {"q": "nobody-of-this-name"})

    assert (
        found.status_code == 200 and email in found.content.decode() and other not in found.content.decode()
    )
    assert partial.status_code == 200 and email in partial.content.decode()
    assert other not in partial.content.decode()
    assert elsewhere.status_code == 200 and email not in elsewhere.content.decode()
