"""A bound on the password and PIN hash checks running at once in a process.

Argon2 is slow on purpose: each check costs tens of milliseconds of CPU and
memory. Without a bound, a flood of failed sign-ins spread over many addresses
(so that no per-client or per-e-mail counter stops it) keeps every worker thread
hashing, and payments and every other route wait for the CPU behind it.

Each check takes one of `PASSWORD_CHECKS_IN_FLIGHT` slots of its process. A
request that cannot get one within `PASSWORD_CHECK_WAIT_SECONDS` answers 429
TOO_MANY_REQUESTS with `Retry-After` instead of queueing: the flood is shed
cheaply and other routes keep the rest of the CPU.

Every Argon2 hash on a request path runs inside `password_check_slot()`: sign-in
and change-password (`authn.services.login.credentials_check`, the dummy hash of
an unknown e-mail included), the step-up PIN, and the admin sign-in
(`authn.backends.StaffEmailBackend`). A thread that holds a slot may enter again
without taking a second one, so a caller can take the slot before the work it
must do only once the check is sure to run (counting the attempt in a lockout).
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from django.conf import settings

from bankapi.errors import ApiError, ErrorCode

# Seconds a refused sign-in is asked to wait: a slot frees in well under a second.
RETRY_AFTER_SECONDS = 1


class PasswordChecksBusy(ApiError):
    """Every slot stayed taken. Not a failed attempt: it counts in no lockout or throttle."""

    def __init__(self) -> None:
        super().__init__(
            ErrorCode.TOO_MANY_REQUESTS,
            "Too many sign-ins are being checked right now; try again shortly.",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            retryable=True,
        )


@cache
def _slots(size: int) -> threading.BoundedSemaphore:
    # One semaphore per configured size, so that a changed setting takes effect
    # (tests change it) without touching slots held under the old one.
    return threading.BoundedSemaphore(size)


_held = threading.local()


@contextmanager
def password_check_slot() -> Iterator[None]:
    """Hold a slot for the hash checks inside, or raise `PasswordChecksBusy` (429)."""
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    slots = _slots(settings.PASSWORD_CHECKS_IN_FLIGHT)
    if not slots.acquire(timeout=settings.PASSWORD_CHECK_WAIT_SECONDS):
        raise PasswordChecksBusy()
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        slots.release()
