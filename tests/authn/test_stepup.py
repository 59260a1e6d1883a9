"""The step-up confirmation service batches and cards call: passkey sessions bound
to one action, TOTP codes and PINs, and the second-factor lockout they share."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone

from authn.models import AuthChallenge, LoginThrottle, User
from authn.serializers import ConfirmationSerializer, confirmation_of
from authn.services.stepup import PasskeyStepUp, step_up_confirm, step_up_passkey_challenge, step_up_pin_set
from bankapi.errors import ApiError
from bankapi.models import Program
from tests.authn.helpers import totp_now, user
from tests.authn.test_sandbox_rerun import rerun_bootstrap
from tests.support.factories_authn import Person
from tests.support.passkeys import enrol_passkey
from tests.support.webauthn import SoftwareAuthenticator

PURPOSE = "card_details"


@pytest.fixture
def business(pin_person, business_program) -> tuple[Person, User, Program]:
    """The business customer: TOTP enrolled, a PIN set, on a program offering PIN confirmation."""
    return pin_person, pin_person.refreshed(), business_program


def refused(code: str, status: int, call, *args, **kwargs) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    assert (caught.value.code, caught.value.status) == (code, status), caught.value.message
    return caught.value


def confirm(
    holder: User, program: Program, confirmation: dict, bound_to: str = "card-1", purpose: str = PURPOSE
):
    step_up_confirm(
        user=holder,
        program=program,
        confirmation=confirmation_of(confirmation),
        purpose=purpose,
        bound_to=bound_to,
    )


def passkey_confirmation(session: PasskeyStepUp, authenticator: SoftwareAuthenticator, **overrides) -> dict:
    return {
        "method": "passkey",
        "passkeySession": session.session,
        "assertion": authenticator.get(session.options, **overrides),
    }


def wrong(secret: str) -> str:
    current = {totp_now(secret)}
    return next(code for code in ("000000", "111111", "222222") if code not in current)


def second_factor_failures(holder: User) -> int:
    row = LoginThrottle.objects.filter(
        factor=LoginThrottle.Factor.SECOND_FACTOR, program_id=holder.program_id, email=holder.email
    ).first()
    return row.failures if row else 0


# Passkey sessions


def test_a_passkey_challenge_lists_every_passkey_and_binds_a_session(api, business):
    person, holder, program = business
    first = enrol_passkey(api, person.email, str(program.id), "Laptop")
    second = enrol_passkey(api, person.email, str(program.id), "Phone")

    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")

    options = session.options
    assert set(options) == {"challenge", "timeout", "rpId", "userVerification", "allowCredentials"}
    assert options["rpId"] == "localhost" and options["timeout"] == 300_000
    assert options["allowCredentials"] == [
        {"type": "public-key", "id": first.credential_id_b64},
        {"type": "public-key", "id": second.credential_id_b64},
    ]
    stored = AuthChallenge.objects.get(user=holder, kind=AuthChallenge.Kind.STEP_UP_PASSKEY)
    assert stored.context == {"purpose": PURPOSE, "bound_to": "card-1"}
    assert session.session not in stored.token_hash
    assert abs(stored.expires_at - stored.created_at - timedelta(minutes=5)) < timedelta(seconds=1)


def test_a_user_without_a_passkey_cannot_open_a_passkey_step_up(business):
    _, holder, _ = business

    refused("NOT_SUPPORTED", 422, step_up_passkey_challenge, user=holder, purpose=PURPOSE, bound_to="card-1")
    assert not AuthChallenge.objects.filter(user=holder, kind=AuthChallenge.Kind.STEP_UP_PASSKEY).exists()


def test_a_verified_assertion_confirms_once(api, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")

    confirm(holder, program, passkey_confirmation(session, authenticator))

    assert AuthChallenge.objects.get(user=holder, kind="STEP_UP_PASSKEY").used_at is not None
    assert holder.passkeys.get().sign_count == authenticator.sign_count
    refused(
        "INVALID_CREDENTIALS", 401, confirm, holder, program, passkey_confirmation(session, authenticator)
    )


def test_a_session_confirms_only_its_own_purpose_and_object(api, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")

    refused(
        "INVALID_CREDENTIALS",
        401,
        confirm,
        holder,
        program,
        passkey_confirmation(session, authenticator),
        "card-2",
    )
    refused(
        "INVALID_CREDENTIALS",
        401,
        confirm,
        holder,
        program,
        passkey_confirmation(session, authenticator),
        "card-1",
        "batch_submit",
    )

    stored = AuthChallenge.objects.get(user=holder, kind="STEP_UP_PASSKEY")
    assert stored.used_at is None and stored.attempts == 0
    confirm(holder, program, passkey_confirmation(session, authenticator))


def test_another_users_session_is_refused(api, totp_person, consumer_program, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")
    other = user(totp_person.email, str(consumer_program.id))
    consumer = consumer_program

    refused(
        "INVALID_CREDENTIALS", 401, confirm, other, consumer, passkey_confirmation(session, authenticator)
    )

    assert AuthChallenge.objects.get(user=holder, kind="STEP_UP_PASSKEY").used_at is None


def test_an_expired_session_is_refused(api, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")

    with time_machine.travel(timezone.now() + timedelta(minutes=5, seconds=1)):
        refused(
            "INVALID_CREDENTIALS", 401, confirm, holder, program, passkey_confirmation(session, authenticator)
        )


def test_a_failed_assertion_is_refused_without_spending_the_session_or_counting(api, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")
    other_session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")
    forgeries = [
        passkey_confirmation(session, authenticator, origin="https://evil.example"),
        passkey_confirmation(session, authenticator, rp_id="evil.example"),
        # Signed over another session's challenge.
        {**passkey_confirmation(other_session, authenticator), "passkeySession": session.session},
        # A passkey the user never registered.
        passkey_confirmation(session, SoftwareAuthenticator()),
    ]

    for forgery in forgeries:
        error = refused("INVALID_CREDENTIALS", 401, confirm, holder, program, forgery)
        assert error.extra["retryable"] is True

    assert second_factor_failures(holder) == 0
    confirm(holder, program, passkey_confirmation(session, authenticator))


def test_a_replayed_signature_count_is_refused(api, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    confirm(
        holder,
        program,
        passkey_confirmation(
            step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1"), authenticator
        ),
    )
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")

    replay = passkey_confirmation(session, authenticator, sign_count=authenticator.sign_count)

    refused("INVALID_CREDENTIALS", 401, confirm, holder, program, replay)


def test_a_session_dies_after_five_failed_assertions(api, business):
    person, holder, program = business
    authenticator = enrol_passkey(api, person.email, str(program.id))
    session = step_up_passkey_challenge(user=holder, purpose=PURPOSE, bound_to="card-1")
    forged = passkey_confirmation(session, authenticator, origin="https://evil.example")
    for _ in range(5):
        refused("INVALID_CREDENTIALS", 401, confirm, holder, program, forged)

    refused(
        "INVALID_CREDENTIALS", 401, confirm, holder, program, passkey_confirmation(session, authenticator)
    )


# TOTP and PIN


def test_a_totp_code_confirms_once(business):
    person, holder, program = business
    with time_machine.travel(timezone.now(), tick=False):
        code = totp_now(person.totp_secret)

        confirm(holder, program, {"method": "totp", "code": code})

        refused("INVALID_CREDENTIALS", 401, confirm, holder, program, {"method": "totp", "code": code})


def test_a_wrong_totp_code_is_refused_and_counted(business):
    person, holder, program = business

    refused(
        "INVALID_CREDENTIALS",
        401,
        confirm,
        holder,
        program,
        {"method": "totp", "code": wrong(person.totp_secret)},
    )

    assert second_factor_failures(holder) == 1


def test_totp_for_a_user_without_an_authenticator_app_is_not_supported(setup_person):
    passkey_user = setup_person
    holder = user(passkey_user.email, passkey_user.program_id)
    program = Program.objects.get(id=passkey_user.program_id)

    refused("NOT_SUPPORTED", 422, confirm, holder, program, {"method": "totp", "code": "123456"})
    assert second_factor_failures(holder) == 0


def test_the_pin_confirms_and_a_wrong_one_is_counted(business):
    person, holder, program = business

    confirm(holder, program, {"method": "pin", "pin": person.pin})
    confirm(holder, program, {"method": "pin", "pin": person.pin})
    wrong_pin = "0000" if person.pin != "0000" else "1111"
    refused("INVALID_CREDENTIALS", 401, confirm, holder, program, {"method": "pin", "pin": wrong_pin})

    assert second_factor_failures(holder) == 1


def test_a_pin_on_a_program_without_pin_confirmation_is_not_supported_before_any_check(
    totp_person, consumer_program
):
    customer = totp_person
    holder = user(customer.email, str(consumer_program.id))
    step_up_pin_set(user=holder, pin="4321")
    consumer = consumer_program

    refused("NOT_SUPPORTED", 422, confirm, holder, consumer, {"method": "pin", "pin": "4321"})
    refused("NOT_SUPPORTED", 422, confirm, holder, consumer, {"method": "pin", "pin": "9999"})

    assert second_factor_failures(holder) == 0


def test_a_user_without_a_pin_is_not_supported(totp_person):
    spare = totp_person
    holder = user(spare.email, spare.program_id)
    program = Program.objects.get(id=spare.program_id)
    program.pin_confirmation_enabled = True
    program.save()

    refused("NOT_SUPPORTED", 422, confirm, holder, program, {"method": "pin", "pin": "1234"})


def test_wrong_codes_and_pins_share_the_lockout(business):
    person, holder, program = business
    wrong_pin = "0000" if person.pin != "0000" else "1111"
    with time_machine.travel(timezone.now(), tick=False):
        for _ in range(3):
            refused(
                "INVALID_CREDENTIALS",
                401,
                confirm,
                holder,
                program,
                {"method": "totp", "code": wrong(person.totp_secret)},
            )
        for _ in range(2):
            refused("INVALID_CREDENTIALS", 401, confirm, holder, program, {"method": "pin", "pin": wrong_pin})

        locked = refused(
            "TOO_MANY_REQUESTS", 429, confirm, holder, program, {"method": "pin", "pin": person.pin}
        )
        assert locked.headers["Retry-After"] == str(15 * 60)
        refused(
            "TOO_MANY_REQUESTS",
            429,
            confirm,
            holder,
            program,
            {"method": "totp", "code": totp_now(person.totp_secret)},
        )

    with time_machine.travel(timezone.now() + timedelta(minutes=15, seconds=1), tick=False):
        confirm(holder, program, {"method": "pin", "pin": person.pin})
        assert second_factor_failures(holder) == 0


def test_the_pin_is_four_to_six_digits_and_stored_hashed(business):
    _, holder, _ = business
    for bad in ("123", "1234567", "12a4", "", "١٢٣٤", " 1234", 1234):
        refused("VALIDATION_ERROR", 400, step_up_pin_set, user=holder, pin=bad)

    step_up_pin_set(user=holder, pin="0042")

    stored = User.objects.get(id=holder.id).step_up_pin
    assert "0042" not in stored and stored.startswith("argon2")
    confirm(holder, holder.program, {"method": "pin", "pin": "0042"})


# The confirmation object


@pytest.mark.parametrize(
    "body",
    [
        {"method": "totp", "code": "123456"},
        {"method": "pin", "pin": "1234"},
        {"method": "pin", "pin": "123456"},
        {
            "method": "passkey",
            "passkeySession": "abc",
            "assertion": {
                "credentialIdB64": "AAAA",
                "clientDataJSON_B64": "AAAA",
                "authenticatorDataB64": "AAAA",
                "signatureB64": "AAAA",
            },
        },
    ],
)
def test_the_three_confirmation_shapes_validate(body):
    serializer = ConfirmationSerializer(data=body)

    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data["method"] == body["method"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("totp", "non_field_errors"),
        ({}, "method"),
        ({"method": "sms", "code": "123456"}, "method"),
        ({"method": ["totp"]}, "method"),
        ({"method": "totp"}, "code"),
        ({"method": "totp", "code": "12345"}, "code"),
        ({"method": "totp", "code": 123456}, "code"),
        ({"method": "pin", "pin": "123"}, "pin"),
        ({"method": "pin", "pin": "12345a"}, "pin"),
        ({"method": "passkey", "assertion": {}}, "passkeySession"),
        ({"method": "passkey", "passkeySession": "abc"}, "assertion"),
        ({"method": "passkey", "passkeySession": "abc", "assertion": {"credentialIdB64": "%%"}}, "assertion"),
    ],
)
def test_a_malformed_confirmation_is_bad_input(body, field):
    serializer = ConfirmationSerializer(data=body)

    assert not serializer.is_valid()
    assert field in serializer.errors


# The sandbox


def test_the_business_customer_has_the_printed_pin_and_a_rerun_restores_it(sandbox):
    # The subject is the sandbox's printed PIN: its business customer from the manifest.
    person, program = sandbox["business"], Program.objects.get(id=sandbox["businessProgramId"])
    holder = user(person["email"], str(program.id))
    assert re.fullmatch(r"[0-9]{4,6}", person["pin"])
    step_up_pin_set(user=holder, pin="9876" if person["pin"] != "9876" else "6789")

    assert rerun_bootstrap()["business"]["pin"] == person["pin"]

    confirm(User.objects.get(id=holder.id), program, {"method": "pin", "pin": person["pin"]})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"method": "totp", "code": "123456", "pin": "1234"}, "pin"),
        ({"method": "pin", "pin": "1234", "extra": True}, "extra"),
        ({"method": "totp", "code": "123456", "sandbox": True}, "sandbox"),
    ],
)
def test_keys_a_confirmation_shape_does_not_take_are_refused(body, field):
    serializer = ConfirmationSerializer(data=body)

    assert not serializer.is_valid()
    assert field in serializer.errors


def test_a_confirmation_inside_a_callers_transaction_fails_before_checking(business):
    # Inside a transaction, a counted wrong code would be rolled back with the
    # refusal: the check refuses to run there at all.
    person, holder, program = business

    with pytest.raises(RuntimeError, match="step_up_confirm must run outside any transaction"):
        with transaction.atomic():
            confirm(holder, program, {"method": "totp", "code": wrong(person.totp_secret)})

    assert second_factor_failures(holder) == 0
