"""POST /v1/auth/change-password: a temporary password is replaced, and the answer
is the next challenge, never tokens."""

import pyotp

from authn.services.challenges import Kind
from tests.authn.helpers import assert_error, auth_post, bearer, challenge_of, login, tokens_of, user
from tests.support.auth import access_header, id_header, tokens_for
from tests.support.factories import PASSWORD, UserFactory

NEW_PASSWORD = "Velvet-Orchard-Compass-81"


def change(api, email: str, temporary: str, new: str, program: str | None, **extra):
    body = {"email": email, "temporary_password": temporary, "new_password": new}
    return auth_post(api, "change-password", body, program=program, **extra)


def test_new_user_replaces_the_temporary_password_then_sets_up_security(api, new_person):
    new_user = new_person
    email, program = new_user.email, new_user.program_id

    response = change(api, email, new_user.password, NEW_PASSWORD, program)

    challenge_of(response, "SECURITY_SETUP_REQUIRED")
    stored = user(email, program)
    assert stored.check_password(NEW_PASSWORD) and not stored.must_change_password
    assert_error(login(api, email, new_user.password, program), 401, "INVALID_CREDENTIALS")
    challenge_of(login(api, email, NEW_PASSWORD, program), "SECURITY_SETUP_REQUIRED")


def test_a_weak_new_password_is_refused_with_the_reasons_and_nothing_changes(api, new_person):
    new_user = new_person
    email, program = new_user.email, new_user.program_id

    response = change(api, email, new_user.password, "12345678", program)

    body = assert_error(response, 400, "VALIDATION_ERROR")
    assert {error["field"] for error in body["errors"]} == {"new_password"}
    assert len(body["errors"]) >= 3, "too short, too common and entirely numeric"
    stored = user(email, program)
    assert stored.must_change_password and stored.check_password(new_user.password)
    assert not stored.challenges.exists()


def test_the_new_password_must_differ_from_the_temporary_one(api, new_person):
    new_user = new_person

    response = change(
        api,
        new_user.email,
        new_user.password,
        new_user.password,
        new_user.program_id,
    )

    assert_error(response, 400, "VALIDATION_ERROR")
    assert user(new_user.email, new_user.program_id).must_change_password


def test_a_wrong_temporary_password_is_refused_like_a_wrong_login(api, new_person):
    new_user = new_person

    response = change(api, new_user.email, "not-it", NEW_PASSWORD, new_user.program_id)
    unknown = change(api, "nobody@sandbox.example", "not-it", NEW_PASSWORD, new_user.program_id)

    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert response.json() == unknown.json()
    assert user(new_user.email, new_user.program_id).must_change_password


def test_a_user_without_a_temporary_password_cannot_use_the_route(api, setup_person):
    passkey_user = setup_person

    response = change(api, passkey_user.email, passkey_user.password, NEW_PASSWORD, passkey_user.program_id)

    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert user(passkey_user.email, passkey_user.program_id).check_password(passkey_user.password)


def test_another_program_cannot_change_the_password(api, new_person, business_program):
    new_user = new_person

    response = change(api, new_user.email, new_user.password, NEW_PASSWORD, str(business_program.id))

    assert_error(response, 401, "INVALID_CREDENTIALS")
    assert user(new_user.email, new_user.program_id).must_change_password


def test_a_user_with_totp_is_asked_for_the_code_not_handed_tokens(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(
        program_id=program, must_change_password=True, totp_secret=pyotp.random_base32(), totp_confirmed=True
    )

    response = change(api, person.email, PASSWORD, NEW_PASSWORD, program)

    challenge_of(response, Kind.SOFTWARE_TOKEN_MFA)


def test_a_bearer_if_sent_must_be_the_same_users_access_token(api, new_person, totp_person):
    new_user = new_person
    email, program = new_user.email, new_user.program_id
    customer = totp_person

    others = change(
        api,
        email,
        new_user.password,
        NEW_PASSWORD,
        program,
        **access_header(customer.email, program),
    )
    assert_error(others, 401, "UNAUTHORIZED")
    id_token = change(api, email, new_user.password, NEW_PASSWORD, program, **id_header(email, program))
    assert_error(id_token, 401, "UNAUTHORIZED")
    garbage = change(api, email, new_user.password, NEW_PASSWORD, program, **bearer("garbage"))
    assert_error(garbage, 401, "UNAUTHORIZED")
    assert user(email, program).must_change_password

    own = tokens_for(email, program)
    response = change(api, email, new_user.password, NEW_PASSWORD, program, **bearer(own.access_token))

    challenge_of(response, "SECURITY_SETUP_REQUIRED")
    old_token = api.get("/v1/capabilities", **bearer(own.access_token))
    assert_error(old_token, 401, "UNAUTHORIZED")


def test_the_user_s_earlier_tokens_are_revoked(api, consumer_program):
    program = str(consumer_program.id)
    person = UserFactory(program_id=program, must_change_password=True)
    earlier = tokens_for(person.email, program)

    challenge_of(change(api, person.email, PASSWORD, NEW_PASSWORD, program), "SECURITY_SETUP_REQUIRED")

    assert_error(api.get("/v1/capabilities", **bearer(earlier.access_token)), 401, "UNAUTHORIZED")
    refresh = auth_post(api, "refresh", {"refresh_token": earlier.refresh_token}, program=program)
    assert_error(refresh, 401, "INVALID_CREDENTIALS")


def test_new_user_journey_from_temporary_password_to_tokens(api, new_person):
    new_user = new_person
    email, program = new_user.email, new_user.program_id
    challenge_of(login(api, email, new_user.password, program), "NEW_PASSWORD_REQUIRED")

    session = challenge_of(
        change(api, email, new_user.password, NEW_PASSWORD, program), "SECURITY_SETUP_REQUIRED"
    )
    setup = auth_post(api, "mfa/setup", {"session_token": session}, program=program).json()["data"]
    confirmed = auth_post(
        api,
        "mfa/verify-setup",
        {"session_token": setup["session_token"], "totp_code": pyotp.TOTP(setup["secret"]).now()},
        program=program,
    )

    assert tokens_of(confirmed)["hasMfa"] is True
    challenge_of(login(api, email, NEW_PASSWORD, program), "SOFTWARE_TOKEN_MFA")


def test_sessions_opened_before_the_change_die_and_the_answered_one_works(api, consumer_program):
    """Someone who signed in with the old password cannot finish that sign-in afterwards."""
    program = str(consumer_program.id)
    person = UserFactory(program_id=program)
    earlier = challenge_of(login(api, person.email, PASSWORD, program), "SECURITY_SETUP_REQUIRED")
    person.set_password("Admin-Issued-Temporary-1")  # an admin resets the password
    person.must_change_password = True
    person.save()

    answered = challenge_of(
        change(api, person.email, "Admin-Issued-Temporary-1", NEW_PASSWORD, program),
        "SECURITY_SETUP_REQUIRED",
    )

    assert_error(
        auth_post(api, "mfa/setup", {"session_token": earlier}, program=program), 401, "INVALID_CREDENTIALS"
    )
    started = auth_post(api, "mfa/setup", {"session_token": answered}, program=program)
    assert started.status_code == 200 and started.json()["data"]["secret"]
