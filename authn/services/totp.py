"""TOTP (RFC 6238, pyotp): 6 digits, 30-second steps, one step of drift either
way, every code accepted once. Used to sign in, to enrol, and for step-up
confirmations (`totp_verify`, which also applies the per-user second-factor
lockout)."""

import uuid
from dataclasses import dataclass

import pyotp
from django.conf import settings
from pyotp.exceptions import OTPVerificationError

from authn.models import User
from authn.services.challenges import (
    Kind,
    SignedIn,
    challenge_attempt,
    challenge_consume,
    challenge_create,
    challenge_refusal,
    enrolling_user,
    sign_in_complete,
)
from authn.services.throttle import second_factor_judge
from bankapi.errors import ApiError, ErrorCode

DRIFT_STEPS = 1


@dataclass(frozen=True)
class TotpSetup:
    """A TOTP enrolment begun: the new secret, its otpauth:// URI for an
    authenticator app, and the MFA_SETUP session that confirms it."""

    secret: str
    otpauth_uri: str
    session_token: str


def _judge_code(user: User, code: str) -> bool | None:
    """True for a right code, now spent; None for a right code already spent (its
    step, or a later one, was accepted before); False for a wrong code."""
    if not user.totp_secret:
        return False
    try:
        step = pyotp.TOTP(user.totp_secret).verify_and_get_timecode(code, valid_window=DRIFT_STEPS)
    except OTPVerificationError:
        return False
    # A code is good once (RFC 6238 section 5.2). The conditional UPDATE lets only
    # one of two requests racing with the same code through, and refuses a code
    # of a step at or before the last one accepted.
    accepted = User.objects.filter(id=user.id, totp_last_step__lt=step).update(totp_last_step=step)
    if not accepted:
        return None
    user.totp_last_step = step
    return True


def _accept_code(user: User, code: str) -> bool:
    return _judge_code(user, code) is True


def totp_verify(user: User, code: str) -> bool:
    """Whether `code` is a current code of the user's enrolled TOTP, never seen before.

    The one TOTP check for sign-in and step-up confirmations (batch submit, card
    details) alike, under the user's second-factor lockout: while locked it
    raises 429 TOO_MANY_REQUESTS, even for a right code. A wrong code counts
    toward the lock; a right code clears the count; a right code already spent
    (a second use within its step, as when two requests share one code) is
    refused and counts for nothing, so requests sharing a code cannot lock the
    user. Call it outside `transaction.atomic`, so a wrong code stays counted
    when the request fails.

    A true answer spends the code: the same code (or an older one) is refused from
    then on, for sign-in and step-up alike.
    """
    return second_factor_judge(user, lambda: user.totp_confirmed and _judge_code(user, code)) is True


def totp_sign_in(*, program_id: uuid.UUID | None, session_token: str, code: str) -> SignedIn:
    """POST verify-2fa: complete SOFTWARE_TOKEN_MFA; answers tokens.

    Wrong codes count per session (MAX_ATTEMPTS) and per user across sessions
    (the second-factor lockout of `totp_verify`).
    """
    challenge = challenge_attempt(session_token, [Kind.SOFTWARE_TOKEN_MFA], program_id)
    if not totp_verify(challenge.user, code):
        raise challenge_refusal(challenge, "Invalid code")
    challenge_consume(challenge)
    return sign_in_complete(challenge.user)


def totp_setup_start(
    *, program_id: uuid.UUID | None, session_token: str | None, bearer_user: User | None
) -> TotpSetup:
    """POST mfa/setup: a new secret (replacing an unconfirmed one) and an MFA_SETUP session.

    Taken with a SECURITY_SETUP_REQUIRED or MFA_SETUP session, or the id-token bearer.
    """
    user, _ = enrolling_user(
        program_id=program_id,
        session_token=session_token,
        kinds=[Kind.SECURITY_SETUP_REQUIRED, Kind.MFA_SETUP],
        bearer_user=bearer_user,
    )
    if user.totp_confirmed:
        raise ApiError(ErrorCode.INVALID_STATE, "Two-factor authentication is already set up")
    secret = pyotp.random_base32()
    user.totp_secret = secret
    user.totp_last_step = 0
    user.save(update_fields=["totp_secret", "totp_last_step"])
    return TotpSetup(
        secret=secret,
        otpauth_uri=pyotp.TOTP(secret).provisioning_uri(
            name=user.email, issuer_name=settings.WEBAUTHN_RP_NAME
        ),
        session_token=challenge_create(user, Kind.MFA_SETUP),
    )


def totp_setup_confirm(*, program_id: uuid.UUID | None, session_token: str, code: str) -> SignedIn:
    """POST mfa/verify-setup: a first code from the new secret enables TOTP; answers tokens."""
    challenge = challenge_attempt(session_token, [Kind.MFA_SETUP], program_id)
    user = challenge.user
    if not _accept_code(user, code):
        raise challenge_refusal(challenge, "Invalid code")
    challenge_consume(challenge)
    User.objects.filter(id=user.id).update(totp_confirmed=True)
    user.totp_confirmed = True
    return sign_in_complete(user)
