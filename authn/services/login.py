"""Password sign-in.

A correct password never yields tokens: it opens the user's next challenge,
chosen in this order: NEW_PASSWORD_REQUIRED, EMAIL_VERIFICATION_REQUIRED,
SOFTWARE_TOKEN_MFA (whoever has TOTP, passkeys or not), PASSKEY_REQUIRED,
MFA_SETUP (TOTP enrolment unfinished), SECURITY_SETUP_REQUIRED (no second factor).
"""

import secrets
import uuid

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from authn.models import User
from authn.services.challenges import (
    CredentialRejected,
    Kind,
    NextChallenge,
    challenge_attempt,
    challenge_consume,
    challenge_create,
    challenge_refusal,
    program_resolve,
)
from authn.services.passkeys import passkey_assertion_options
from authn.services.password_checks import password_check_slot
from authn.services.throttle import (
    client_throttle_address,
    second_factor_attempt,
    second_factor_clear,
    sign_in_slot,
    throttle_attempt,
    throttle_clear,
)
from authn.tokens import tokens_revoke_all
from bankapi.errors import ApiError, ErrorCode

_EMAIL_CODE_SALT = "authn.email-verification-code"


def _bad_credentials() -> CredentialRejected:
    return CredentialRejected("Incorrect email or password", retryable=True)


def credentials_check(*, program: str | None, email: str, password: str, temporary: bool = False) -> User:
    """The user these credentials name, or 401 INVALID_CREDENTIALS; 429 while locked.

    Unknown program, unknown e-mail, inactive user and wrong password answer the
    same body after the same work (one password hash), and count towards the
    lockout alike. The attempt is counted before the hash (see `throttle_attempt`),
    so parallel guesses cannot outrun the lockout, and only once a password-check
    slot is held: a sign-in refused for want of a slot (429) was never tried, so
    it must not count. `temporary` accepts only a temporary password an admin issued.
    """
    email = email.strip().lower()
    with password_check_slot():
        try:
            program_id = program_resolve(program)
        except CredentialRejected:
            User().set_password(password)
            raise _bad_credentials() from None
        now = timezone.now()
        throttle_attempt(program_id, email, now)
        # program_id None: a management user, who belongs to no program (IS NULL).
        user = User.objects.filter(program_id=program_id, email=email).first()  # type: ignore[misc]
        if user is None:
            User().set_password(password)
            valid = False
        else:
            valid = user.check_password(password) and user.is_active
            valid = valid and (user.must_change_password or not temporary)
    if not valid or user is None:
        raise _bad_credentials()
    throttle_clear(program_id, email)
    return user


def _email_code_digest(user: User, code: str) -> bytes:
    return salted_hmac(_EMAIL_CODE_SALT, f"{user.id}:{code}", algorithm="sha256").digest()


def _email_verification_challenge(user: User) -> str:
    code = f"{secrets.randbelow(10**6):06d}"
    token = challenge_create(user, Kind.EMAIL_VERIFICATION_REQUIRED, secret=_email_code_digest(user, code))
    send_mail(
        "Your verification code",
        f"Your verification code is {code}. It expires in 5 minutes.",
        None,
        [user.email],
    )
    return token


def challenge_next(user: User) -> NextChallenge:
    """The challenge response for the user's next sign-in step."""
    fido2options = None
    if user.must_change_password:
        kind, token = Kind.NEW_PASSWORD_REQUIRED, challenge_create(user, Kind.NEW_PASSWORD_REQUIRED)
    elif not user.email_verified:
        kind, token = Kind.EMAIL_VERIFICATION_REQUIRED, _email_verification_challenge(user)
    elif user.totp_confirmed:
        kind, token = Kind.SOFTWARE_TOKEN_MFA, challenge_create(user, Kind.SOFTWARE_TOKEN_MFA)
    elif user.has_passkey:
        challenge, fido2options = passkey_assertion_options(user)
        kind, token = Kind.PASSKEY_REQUIRED, challenge_create(user, Kind.PASSKEY_REQUIRED, secret=challenge)
    elif user.totp_secret:
        kind, token = Kind.MFA_SETUP, challenge_create(user, Kind.MFA_SETUP)
    else:
        kind, token = Kind.SECURITY_SETUP_REQUIRED, challenge_create(user, Kind.SECURITY_SETUP_REQUIRED)
    return NextChallenge(kind=kind, session_token=token, options=fido2options)


def password_login(*, program: str | None, email: str, password: str, client: str) -> NextChallenge:
    """POST login: check the password, answer the next challenge (never tokens).

    `client` is the caller's address, for the per-client throttle and the
    order in which waiting sign-ins get a check slot. The slot is taken before
    the client's attempt is counted: a sign-in refused for want of one counts
    once, as a failure of its address (`sign_in_slot`), and never in the
    e-mail's lockout. The slot is given back before the challenge is made (that
    may send an e-mail).
    """
    with sign_in_slot(client), client_throttle_address(client):
        user = credentials_check(program=program, email=email, password=password)
    return challenge_next(user)


def password_change(
    *,
    program: str | None,
    email: str,
    temporary_password: str,
    new_password: str,
    bearer_user: User | None,
    client: str,
) -> NextChallenge:
    """POST change-password: replace a temporary password, answer the next challenge.

    Every earlier token and unused sign-in session of the user is revoked: a
    password reset ends old sessions. `client` is the caller's address: it
    waits for a check slot as a sign-in from there does (`sign_in_slot`).
    """
    # One slot for both hashes: the temporary password's check and the new one's.
    with sign_in_slot(client):
        user = credentials_check(program=program, email=email, password=temporary_password, temporary=True)
        if bearer_user is not None and bearer_user.id != user.id:
            raise ApiError(ErrorCode.UNAUTHORIZED, "The bearer token belongs to another user")
        reasons = []
        if new_password == temporary_password:
            reasons.append("The new password must differ from the temporary password.")
        try:
            validate_password(new_password, user)
        except ValidationError as exc:
            reasons.extend(exc.messages)
        if reasons:
            raise ApiError(
                ErrorCode.VALIDATION_ERROR,
                "The new password is not acceptable",
                errors=[{"field": "new_password", "message": reason} for reason in reasons],
            )
        user.set_password(new_password)
    user.must_change_password = False
    user.save(update_fields=["password", "must_change_password"])
    # Revoke first: it also expires every open session, which must not include
    # the one answered now.
    tokens_revoke_all(user)
    return challenge_next(user)


def email_verify(*, program_id: uuid.UUID | None, session_token: str, code: str) -> NextChallenge:
    """POST verify-email: the e-mailed code marks the address verified; next challenge.

    Wrong codes count per session and per user across sessions (the second-factor
    lockout, shared with TOTP): every login mails a new code, but not new guesses.
    """
    challenge = challenge_attempt(session_token, [Kind.EMAIL_VERIFICATION_REQUIRED], program_id)
    user = challenge.user
    second_factor_attempt(user)
    if not constant_time_compare(bytes(challenge.secret), _email_code_digest(user, code)):
        raise challenge_refusal(challenge, "Invalid code")
    second_factor_clear(user)
    challenge_consume(challenge)
    User.objects.filter(id=user.id).update(email_verified=True)
    user.email_verified = True
    return challenge_next(user)
