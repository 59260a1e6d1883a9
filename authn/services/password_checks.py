"""A bound on the password and PIN hash checks running at once in a process.

Argon2 is slow on purpose: each check costs tens of milliseconds of CPU and
memory. Without a bound, a flood of failed sign-ins spread over many addresses
(so that no per-client or per-e-mail counter stops it) keeps every worker thread
hashing, and payments and every other route wait for the CPU behind it.

Each check takes one of `PASSWORD_CHECKS_IN_FLIGHT` slots of its process. When
none is free, the request waits, served in order of its rank (for a sign-in,
its address's recent failures, then its recent refusals: fewest first, then
first come). How long it may wait depends on the failures:

- none (an address with no recent failure: ordinary traffic, a person, an
  integrator signing in several users at once): as long as the checks ahead of
  it take, up to `PASSWORD_CHECK_CLEAN_WAIT_SECONDS` (10 s); two or eight
  correct sign-ins sent together all get their check;
- some: `PASSWORD_CHECK_WAIT_SECONDS`.

At most `PASSWORD_CHECK_WAITERS` requests wait per process (a waiting request
holds a server thread; the default leaves the other threads free), and of
them at most as many from addresses with failures as there are slots (a flood
is refused at once rather than holding threads for its short wait). A newcomer
that outranks the worst waiter of a full queue takes its place, and the one
left out answers 429 TOO_MANY_REQUESTS with `Retry-After`. So a flood is shed
cheaply, other routes keep the rest of the CPU and threads, and a real user,
whose address has no failures, is served before the flood that fills the queue.

Every Argon2 hash on a request path runs inside `password_check_slot()`: sign-in
and change-password (`authn.services.login.credentials_check`, the dummy hash of
an unknown e-mail included), the step-up PIN, and the admin sign-in
(`authn.backends.StaffEmailBackend`). A thread that holds a slot may enter again
without taking a second one, so a caller can take the slot before the work it
must do only once the check is sure to run (counting the attempt in a lockout).
"""

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache

from django.conf import settings

from bankapi.errors import ApiError, ErrorCode

# Seconds a refused sign-in is asked to wait: a slot frees in well under a second.
RETRY_AFTER_SECONDS = 1


class PasswordChecksBusy(ApiError):
    """No slot for this check: every one stayed taken, or better-ranked requests
    filled the queue. The password was never tried: it counts in no lockout; a
    sign-in's refusal counts as a failure of its address when that address
    already had failures (`sign_in_slot`)."""

    def __init__(self) -> None:
        super().__init__(
            ErrorCode.TOO_MANY_REQUESTS,
            "Too many sign-ins are being checked right now; try again shortly.",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            retryable=True,
        )


# (recent failures, recent refusals) of the request's client: lowest first.
Rank = tuple[int, int]


@dataclass(order=True)
class _Waiter:
    rank: Rank
    arrival: int
    granted: bool = field(default=False, compare=False)
    answered: threading.Event = field(default_factory=threading.Event, compare=False)


class _Gate:
    """`size` slots, and at most `max_waiters` waiters (at most `size` of them
    ranked by failures), served lowest rank first.

    A released slot is handed to the best waiter directly (it never falls free
    for a newcomer to snatch), so the order holds. A waiting request holds a
    server thread, hence the bound on waiters; the newcomer that outranks the
    worst of them takes its place (among equal ranks the newest is left out).
    """

    def __init__(self, size: int, max_waiters: int) -> None:
        self.size = size
        self.max_waiters = max_waiters
        self.in_use = 0
        self.waiters: list[_Waiter] = []
        self._lock = threading.Lock()
        self._arrivals = itertools.count()

    def _take_free(self) -> bool:
        if self.in_use < self.size and not self.waiters:
            self.in_use += 1
            return True
        return False

    def acquire(self, rank: Callable[[], Rank], wait: Callable[[Rank], float]) -> bool:
        """Take a slot, waiting `wait(rank)` seconds at most; False when refused."""
        with self._lock:
            if self._take_free():
                return True
        # Only a request that must wait pays for its rank (it may read the database),
        # and outside the lock.
        waiter_rank = rank()
        with self._lock:
            if self._take_free():
                return True
            me = _Waiter(waiter_rank, next(self._arrivals))
            self.waiters.append(me)
            # Sign-ins from addresses with failures: no more waiting than there are
            # slots (they rank after every other, so the worst is one of them).
            ranked = sum(1 for waiter in self.waiters if waiter.rank[0] > 0)
            if len(self.waiters) > self.max_waiters or ranked > self.size:
                worst = max(self.waiters)
                self.waiters.remove(worst)
                worst.answered.set()  # not granted: refused
                if worst is me:
                    return False
        me.answered.wait(wait(waiter_rank))
        with self._lock:
            if not me.granted and me in self.waiters:
                self.waiters.remove(me)  # waited long enough
            return me.granted

    def release(self) -> None:
        with self._lock:
            if self.waiters:
                best = min(self.waiters)
                self.waiters.remove(best)
                best.granted = True  # the slot passes to it, still counted in use
                best.answered.set()
            else:
                self.in_use -= 1


@cache
def _gate(size: int, max_waiters: int) -> _Gate:
    # One gate per configured size, so that a changed setting takes effect
    # (tests change it) without touching slots held under the old one.
    return _Gate(size, max_waiters)


def current_gate() -> _Gate:
    """The gate of the current settings."""
    return _gate(settings.PASSWORD_CHECKS_IN_FLIGHT, settings.PASSWORD_CHECK_WAITERS)


def _wait_seconds(rank: Rank) -> float:
    """How long a request of `rank` may wait: ordinary traffic (no recent failure)
    as long as the checks ahead of it take, up to its own bound; others briefly."""
    if rank[0] == 0:
        return float(settings.PASSWORD_CHECK_CLEAN_WAIT_SECONDS)
    return float(settings.PASSWORD_CHECK_WAIT_SECONDS)


_held = threading.local()


def _no_failures() -> Rank:
    return (0, 0)


@contextmanager
def password_check_slot(rank: Callable[[], Rank] = _no_failures) -> Iterator[None]:
    """Hold a slot for the hash checks inside, or raise `PasswordChecksBusy` (429).

    `rank` orders this request among those waiting (lowest first) and sets how
    long it may wait; it is called only when the request must wait. A sign-in
    passes its address's recent failures and refusals
    (`authn.services.throttle.sign_in_slot`); the step-up PIN, behind a bearer,
    ranks first.
    """
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    gate = current_gate()
    if not gate.acquire(rank, _wait_seconds):
        raise PasswordChecksBusy()
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        gate.release()
