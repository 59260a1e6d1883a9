"""A bound on the password and PIN hash checks running at once in a process.

Argon2 is slow on purpose: each check costs tens of milliseconds of CPU and
memory. Without a bound, a flood of failed sign-ins spread over many addresses
(so that no per-client or per-e-mail counter stops it) keeps every worker thread
hashing, and payments and every other route wait for the CPU behind it.

Each check takes one of `PASSWORD_CHECKS_IN_FLIGHT` slots of its process. A
request that cannot get one within `PASSWORD_CHECK_WAIT_SECONDS` answers 429
TOO_MANY_REQUESTS with `Retry-After` instead of queueing, and so does one that
finds as many requests already waiting as there are slots: the flood is shed
cheaply, and other routes keep the rest of the CPU and the server's threads.

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

# Requests of this process waiting for a slot. At most as many wait as there are
# slots; any more are refused at once: a waiting request holds a server thread,
# and under a flood a queue of them would take every thread from other routes.
_waiting = 0
_waiting_lock = threading.Lock()


def _wait_for(slots: threading.BoundedSemaphore, size: int) -> bool:
    global _waiting
    with _waiting_lock:
        if _waiting >= size:
            return False
        _waiting += 1
    try:
        return slots.acquire(timeout=settings.PASSWORD_CHECK_WAIT_SECONDS)
    finally:
        with _waiting_lock:
            _waiting -= 1


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
    size = settings.PASSWORD_CHECKS_IN_FLIGHT
    slots = _slots(size)
    if not slots.acquire(blocking=False) and not _wait_for(slots, size):
        raise PasswordChecksBusy()
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        slots.release()
