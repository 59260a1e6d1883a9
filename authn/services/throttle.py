"""Lockouts (DESIGN.md section 12): 5 failures in 15 minutes lock for 15 minutes.

Two counters, one implementation (`LoginThrottle.factor`):

- passwords, per (program, e-mail as typed), known or not, so a lockout says
  nothing about which addresses exist; a correct password clears it;
- second-factor codes, per user, across all of the user's sign-in sessions
  (verify-2fa, verify-email, step-up TOTP); a correct code clears it, a correct
  password does not. Without it a session's five-code cap meant nothing: the
  password opens as many fresh sessions as an attacker likes.

Every attempt is counted up front, under the row lock and before the password
hash or the code is checked, and a success then forgets the count. Counting only
after the check would let requests sent in parallel all pass a "not locked yet"
check before any of them recorded its failure: 30 parallel guesses would all be
evaluated. Counted first, at most MAX_FAILURES guesses are evaluated per window
whatever the concurrency.

Call the `*_attempt` functions outside `transaction.atomic`: a counted attempt
must stay counted when the guess then fails and its error rolls the request back.
"""

import uuid
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from authn.models import LoginThrottle, User
from bankapi.errors import too_many_requests

Factor = LoginThrottle.Factor

MAX_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)
LOCKOUT = timedelta(minutes=15)

_LOCKED_MESSAGES = {
    Factor.PASSWORD: "Too many failed sign-in attempts; try again later.",
    Factor.SECOND_FACTOR: "Too many wrong codes; try again later.",
}


# Looks for a key's row (see `_locked_row`). A retry means other requests created
# and deleted the row in between, so more than a couple never happen.
_ROW_TRIES = 5


def _locked_row(factor: str, program_id: uuid.UUID | None, email: str, now: datetime) -> LoginThrottle:
    """The key's row, created if missing, locked until the transaction ends.

    The row lock serialises concurrent attempts on one key: each sees the count
    the previous one left, so no more than MAX_FAILURES get through.
    """
    tries = 0
    while True:
        try:
            return LoginThrottle.objects.select_for_update().get_or_create(
                factor=factor, program_id=program_id, email=email, defaults={"window_started_at": now}
            )[0]
        except IntegrityError:
            # Our insert lost to a concurrent one, and a success deleted that row
            # before get_or_create could read it back (it then re-raises the
            # IntegrityError, its savepoint rolled back): look again.
            tries += 1
            if tries == _ROW_TRIES:
                raise


def _attempt(factor: str, program_id: uuid.UUID | None, email: str, now: datetime) -> None:
    with transaction.atomic():
        throttle = _locked_row(factor, program_id, email, now)
        if throttle.locked_until is not None and throttle.locked_until > now:
            raise too_many_requests(_LOCKED_MESSAGES[factor], (throttle.locked_until - now).total_seconds())
        window_over = throttle.window_started_at <= now - FAILURE_WINDOW
        lock_over = throttle.locked_until is not None
        if window_over or lock_over:
            throttle.window_started_at, throttle.failures, throttle.locked_until = now, 0, None
        throttle.failures += 1
        if throttle.failures >= MAX_FAILURES:
            throttle.locked_until = now + LOCKOUT
        throttle.save()


def throttle_attempt(program_id: uuid.UUID | None, email: str, now: datetime) -> None:
    """Count one password attempt of the pair, or refuse it (429) while the pair is locked.

    Call before checking the password. The attempt that reaches MAX_FAILURES sets
    the lock yet is still evaluated (a wrong password answers 401, a right one
    clears the pair); the next one is 429.
    """
    _attempt(Factor.PASSWORD, program_id, email, now)


def throttle_clear(program_id: uuid.UUID | None, email: str) -> None:
    """A correct password forgets the earlier password failures (not the code failures)."""
    LoginThrottle.objects.filter(factor=Factor.PASSWORD, program_id=program_id, email=email).delete()


def second_factor_attempt(user: User, now: datetime | None = None) -> None:
    """Count one second-factor code of the user, or refuse it (429) while locked.

    Call before checking the code; on success call `second_factor_clear`.
    """
    _attempt(Factor.SECOND_FACTOR, user.program_id, user.email, now or timezone.now())


def second_factor_clear(user: User) -> None:
    """A correct code forgets the user's earlier wrong codes."""
    LoginThrottle.objects.filter(
        factor=Factor.SECOND_FACTOR, program_id=user.program_id, email=user.email
    ).delete()


def throttle_purge(now: datetime) -> int:
    """Forget counters whose window and lock are both over (unknown e-mails pile up otherwise)."""
    stale = LoginThrottle.objects.filter(window_started_at__lte=now - FAILURE_WINDOW).filter(
        Q(locked_until__isnull=True) | Q(locked_until__lte=now)
    )
    return stale.delete()[0]
