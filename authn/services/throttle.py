"""Password lockout (DESIGN.md section 12): 5 failures in 15 minutes lock the
(program, e-mail) for 15 minutes.

Keyed by the e-mail as typed, known or not, so a lockout says nothing about
which addresses exist.
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


def throttle_check(program_id: uuid.UUID | None, email: str, now: datetime) -> None:
    """Refuse, before any password is checked, while the pair is locked."""
    locked_until = (
        LoginThrottle.objects.filter(program_id=program_id, email=email, locked_until__gt=now)
        .values_list("locked_until", flat=True)
        .first()
    )
    if locked_until is not None:
        raise too_many_requests(
            "Too many failed sign-in attempts; try again later.", (locked_until - now).total_seconds()
        )


def throttle_record_failure(program_id: uuid.UUID | None, email: str, now: datetime) -> None:
    with transaction.atomic():
        # The row lock serialises concurrent failures of one pair: without it two
        # requests could both read 4 failures, both write 5, and the sixth guess
        # would slip through before the lock.
        throttle, _ = LoginThrottle.objects.select_for_update().get_or_create(
            program_id=program_id, email=email, defaults={"window_started_at": now}
        )
        window_over = throttle.window_started_at <= now - FAILURE_WINDOW
        lock_over = throttle.locked_until is not None and throttle.locked_until <= now
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
