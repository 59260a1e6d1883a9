"""Step-up confirmation of sensitive actions (batch submit, secure card details).

A signed-in user confirms one action with a second proof, in one of three ways:

- `passkey`: a passkey session opened by `step_up_passkey_challenge` for that
  action, plus the WebAuthn assertion over its challenge. The session is bound
  to the user, a purpose and the object it guards (a card, an SCA challenge),
  lives five minutes and is spent when its assertion verifies, and only then.
  A failed assertion is a 401 and does not count towards the second-factor
  lockout: without the authenticator's private key nobody can guess one.
- `totp`: a current code of the user's authenticator app, accepted once.
- `pin`: the user's step-up PIN (4 to 6 digits, stored hashed), on programs that
  offer PIN confirmation.

Wrong TOTP codes and PINs count in the user's second-factor lockout, shared with
sign-in: five within 15 minutes lock them for 15 minutes (429 with Retry-After).

`step_up_confirm` runs outside any transaction (RuntimeError otherwise): a
counted wrong code and a spent session attempt must stay so when the request
then fails.
"""

import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.hashers import check_password, make_password

from authn.models import User
from authn.services.challenges import (
    CredentialRejected,
    Kind,
    challenge_attempt,
    challenge_consume,
    challenge_create,
    challenge_refusal,
)
from authn.services.passkeys import PasskeyAssertion, passkey_assertion_options, passkey_assertion_verify
from authn.services.password_checks import password_check_slot
from authn.services.throttle import second_factor_attempt, second_factor_clear
from authn.services.totp import totp_verify
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Program
from bankapi.transactions import outside_transaction_require

PASSKEY = "passkey"
TOTP = "totp"
PIN = "pin"
METHODS = (PASSKEY, TOTP, PIN)

PIN_PATTERN = re.compile(r"[0-9]{4,6}", re.ASCII)


@dataclass(frozen=True)
class PasskeyConfirmation:
    """A passkey step-up: the session `step_up_passkey_challenge` opened, and the
    assertion over its challenge."""

    session: str
    assertion: PasskeyAssertion


@dataclass(frozen=True)
class TotpConfirmation:
    code: str


@dataclass(frozen=True)
class PinConfirmation:
    pin: str


Confirmation = PasskeyConfirmation | TotpConfirmation | PinConfirmation


@dataclass(frozen=True)
class PasskeyStepUp:
    """An open passkey step-up: its session (opaque, single-use) and the WebAuthn
    request options to hand to navigator.credentials.get()."""

    session: str
    options: dict[str, Any]


def _binding(purpose: str, bound_to: str) -> dict[str, str]:
    return {"purpose": purpose, "bound_to": str(bound_to)}


def step_up_pin_set(*, user: User, pin: str) -> None:
    """Set (or replace) the user's step-up PIN: 4 to 6 ASCII digits, kept hashed."""
    if not isinstance(pin, str) or not PIN_PATTERN.fullmatch(pin):
        raise validation_error("pin", "The PIN must be 4 to 6 digits.")
    user.step_up_pin = make_password(pin)
    user.save(update_fields=["step_up_pin"])


def step_up_pin_matches(user: User, pin: str) -> bool:
    """Whether `pin` is the user's PIN (no lockout counting: for bootstrap reruns).

    An Argon2 check: on a request path, hold a `password_check_slot()` around it.
    """
    return bool(user.step_up_pin) and check_password(pin, user.step_up_pin)


def step_up_passkey_challenge(
    *, user: User, purpose: str, bound_to: str, challenge: bytes | None = None
) -> PasskeyStepUp:
    """Open a passkey step-up for one action.

    Its options list every passkey of the user in `allowCredentials`. The
    session is single-use, valid five minutes, and confirms only `purpose` on
    `bound_to` for this user. A user with no passkey: 422 NOT_SUPPORTED.
    `challenge`: the exact WebAuthn challenge to sign (random when omitted).
    """
    if not user.has_passkey:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "The user has no passkey; confirm with another method")
    challenge, fido2options = passkey_assertion_options(user, challenge)
    session = challenge_create(
        user, Kind.STEP_UP_PASSKEY, secret=challenge, context=_binding(purpose, bound_to)
    )
    return PasskeyStepUp(session=session, options=fido2options)


def _confirm_passkey(user: User, confirmation: PasskeyConfirmation, binding: dict[str, str]) -> None:
    challenge = challenge_attempt(
        confirmation.session, [Kind.STEP_UP_PASSKEY], user.program_id, user=user, context=binding
    )
    try:
        passkey_assertion_verify(user, bytes(challenge.secret), confirmation.assertion)
    except CredentialRejected as exc:
        raise challenge_refusal(challenge, exc.message) from exc
    challenge_consume(challenge)


def _confirm_totp(user: User, code: str) -> None:
    if not user.totp_confirmed:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "The user has no authenticator app set up")
    if not totp_verify(user, code):
        raise CredentialRejected("Invalid code")


def _confirm_pin(user: User, pin: str) -> None:
    if not user.step_up_pin:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "The user has no step-up PIN")
    # The slot first: a PIN refused for want of one (429) was never tried and must not count.
    with password_check_slot():
        second_factor_attempt(user)
        matches = step_up_pin_matches(user, pin)
    if not matches:
        raise CredentialRejected("Invalid PIN")
    second_factor_clear(user)


def step_up_confirm(
    *, user: User, program: Program, confirmation: Confirmation, purpose: str, bound_to: str
) -> None:
    """Verify a confirmation or raise.

    422 NOT_SUPPORTED for a method the program does not offer (a PIN while PIN
    confirmation is off) or the user has not set up, before any check; 401
    INVALID_CREDENTIALS for a wrong code, PIN or assertion, or a passkey session
    that is spent, expired, another user's or bound to another action; 429
    while the user's second factor is locked (TOTP and PIN).
    """
    outside_transaction_require("step_up_confirm")
    if isinstance(confirmation, PinConfirmation) and not program.pin_confirmation_enabled:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "PIN confirmation is not offered by this program")
    if isinstance(confirmation, PasskeyConfirmation):
        _confirm_passkey(user, confirmation, _binding(purpose, bound_to))
    elif isinstance(confirmation, TotpConfirmation):
        _confirm_totp(user, confirmation.code)
    else:
        _confirm_pin(user, confirmation.pin)
