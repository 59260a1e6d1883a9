"""Password lockout (DESIGN.md section 12): 5 failures in 15 minutes lock the
(program, e-mail) for 15 minutes.

Keyed by the e-mail as typed, known or not, so a lockout says nothing about
which addresses exist.

Every attempt is counted up front, under the row lock and before the password
hash is computed, and a success then forgets the count. Counting only after
the (slow) hash would let requests sent in parallel all pass a "not locked yet"
check before any of them recorded its failure: 30 parallel guesses would all
be evaluated. Counted first, at most MAX_FAILURES passwords are evaluated per
window whatever the concurrency.
"""

import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from authn.models import LoginThrottle
from bankapi.errors import too_many_requests

MAX_FAILURES = 5
FAILURE_WINDOW = timedelta(minutes=15)
LOCKOUT = timedelta(minutes=15)


def throttle_attempt(program_id: uuid.UUID | None, email: str, now: datetime) -> None:
    """Count one password attempt of the pair, or refuse it (429) while the pair is locked.

    Call before checking the password and outside `transaction.atomic`: the count
    must stay when the attempt then fails and its error rolls the request back.
    The attempt that reaches MAX_FAILURES sets the lock yet is still evaluated (a
    wrong password answers 401, a right one clears the pair); the next one is 429.
    """
    with transaction.atomic():
        # The row lock serialises concurrent attempts of one pair: each sees the
        # count the previous one left, so no more than MAX_FAILURES get through.
        throttle, _ = LoginThrottle.objects.select_for_update().get_or_create(
            program_id=program_id, email=email, defaults={"window_started_at": now}
        )
        if throttle.locked_until is not None and throttle.locked_until > now:
            raise too_many_requests(
                "Too many failed sign-in attempts; try again later.",
                (throttle.locked_until - now).total_seconds(),
            )
        window_over = throttle.window_started_at <= now - FAILURE_WINDOW
        lock_over = throttle.locked_until is not None
        if window_over or lock_over:
            throttle.window_started_at, throttle.failures, throttle.locked_until = now, 0, None
        throttle.failures += 1
        if throttle.failures >= MAX_FAILURES:
            throttle.locked_until = now + LOCKOUT
        throttle.save()


def throttle_clear(program_id: uuid.UUID | None, email: str) -> None:
    """A correct password forgets the earlier failures."""
    LoginThrottle.objects.filter(program_id=program_id, email=email).delete()


def throttle_purge(now: datetime) -> int:
    """Forget pairs whose window and lock are both over (unknown e-mails pile up otherwise)."""
    stale = LoginThrottle.objects.filter(window_started_at__lte=now - FAILURE_WINDOW).filter(
        Q(locked_until__isnull=True) | Q(locked_until__lte=now)
    )
    return stale.delete()[0]
