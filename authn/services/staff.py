"""What back-office staff do to users, and their own admin sign-in.

Called by admin actions (each recorded in the admin log by the caller) and usable
from a shell; nothing here answers HTTP.
"""

import secrets
import string
from dataclasses import dataclass
from datetime import datetime

import pyotp
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from pyotp.exceptions import OTPVerificationError

from authn.models import LoginThrottle, User
from authn.services.totp import DRIFT_STEPS
from authn.tokens import tokens_revoke_all

# Letters and digits without look-alikes (0/O, 1/l/I): read out over the phone.
_TEMPORARY_ALPHABET = "".join(c for c in string.ascii_letters + string.digits if c not in "0O1lI")
TEMPORARY_PASSWORD_LENGTH = 16


@dataclass(frozen=True)
class TemporaryPassword:
    user: User
    password: str


def user_password_reset_temporary(*, user: User) -> TemporaryPassword:
    """Give the user a one-time password: the next sign-in with it answers
    NEW_PASSWORD_REQUIRED, and every token and session of the user ends now.

    The lockouts are lifted too: a user locked out by their own guesses is the
    usual reason support resets a password.
    """
    password = "".join(secrets.choice(_TEMPORARY_ALPHABET) for _ in range(TEMPORARY_PASSWORD_LENGTH))
    with transaction.atomic():
        user.set_password(password)
        user.must_change_password = True
        user.save(update_fields=["password", "must_change_password"])
        tokens_revoke_all(user)
        user_unlock(user=user)
    return TemporaryPassword(user=user, password=password)


def user_lockouts(user: User) -> QuerySet[LoginThrottle]:
    """The user's lockout counters: password (by e-mail), second factor and
    passkey sign-in. Per-client counters (by address) belong to no user."""
    return LoginThrottle.objects.filter(program_id=user.program_id, email=user.email).exclude(  # type: ignore[misc]  # no program: IS NULL
        factor=LoginThrottle.Factor.CLIENT
    )


def user_is_locked(user: User) -> bool:
    return user_lockouts(user).filter(locked_until__gt=timezone.now()).exists()


def user_unlock(*, user: User) -> int:
    """Lift the user's password and second-factor lockouts and forget the
    failures counted so far; answers how many counters were cleared."""
    return user_lockouts(user).delete()[0]


def user_sign_out_everywhere(*, user: User) -> None:
    """Global sign-out: every token and sign-in session of the user ends now."""
    tokens_revoke_all(user)


def user_locked_condition(now: datetime | None = None) -> Q:
    """A condition on User: a lockout of the user is in force now (admin column and filter)."""
    locked = LoginThrottle.objects.filter(
        email=OuterRef("email"), locked_until__gt=now or timezone.now()
    ).exclude(factor=LoginThrottle.Factor.CLIENT)
    # SQL's NULL = NULL is not true: program-less (staff, management) rows match apart.
    return Q(Exists(locked.filter(program_id=OuterRef("program_id")))) | Q(
        Exists(locked.filter(program__isnull=True)), program__isnull=True
    )


def staff_totp_enrol(*, user: User, secret: str, code: str) -> bool:
    """Finish a staff member's authenticator enrolment at admin sign-in: the code
    must be a current code of `secret`. Only for a user with no TOTP confirmed
    (an enrolled user cannot be re-enrolled by whoever knows the password)."""
    try:
        step = pyotp.TOTP(secret).verify_and_get_timecode(code, valid_window=DRIFT_STEPS)
    except OTPVerificationError:
        return False
    # Conditional update: two sign-ins racing to enrol cannot both win, and an
    # enrolled user is never overwritten.
    enrolled = User.objects.filter(id=user.id, totp_confirmed=False).update(
        totp_secret=secret, totp_confirmed=True, totp_last_step=step
    )
    if not enrolled:
        return False
    user.refresh_from_db(fields=["totp_secret", "totp_confirmed", "totp_last_step"])
    return True
