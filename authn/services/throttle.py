"""Lockouts and the per-client throttle (docs/rate-limits.md).

Per key, 5 failures in 15 minutes lock for 15 minutes (settings
`AUTH_LOCKOUT_MAX_FAILURES`, `AUTH_LOCKOUT_WINDOW_SECONDS`, `AUTH_LOCKOUT_SECONDS`).
Three counters of that kind, one implementation (`LoginThrottle.factor`):

- passwords, per (program, e-mail as typed), known or not, so a lockout says
  nothing about which addresses exist; a correct password clears it;
- second-factor codes, per user, across all of the user's sign-in sessions
  (verify-2fa, verify-email, step-up TOTP); a correct code clears it, a correct
  password does not. Without it a session's five-code cap meant nothing: the
  password opens as many fresh sessions as an attacker likes;
- passkey sign-ins, per user (verify-passkey); a verified assertion clears it.

And one counter per client address (`client_throttle`; an IPv6 address counts
per /64, the block one subscriber gets): failed login, verify-2fa and
verify-passkey attempts of any user from one address, and sign-ins from an
address with failures refused for want of a password-check slot
(`sign_in_slot`), 50 in 15 minutes by default (`AUTH_CLIENT_MAX_FAILURES`,
`AUTH_CLIENT_WINDOW_SECONDS`). The per-user counters cannot stop one client
spraying many e-mails. The same count ranks the sign-ins waiting for a
password-check slot: fewest failures first, and an address with none waits
longest (ordinary concurrency is never refused).

Every attempt is counted up front, under the row lock and before the password
hash or the code is checked, and a success then forgets the count. Counting only
after the check would let requests sent in parallel all pass a "not locked yet"
check before any of them recorded its failure: 30 parallel guesses would all be
evaluated. Counted first, at most MAX_FAILURES guesses are evaluated per window
whatever the concurrency.

Call the `*_attempt` functions outside `transaction.atomic`: a counted attempt
must stay counted when the guess then fails and its error rolls the request back.
"""

import ipaddress
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from authn.models import LoginThrottle, User
from authn.services.password_checks import PasswordChecksBusy, password_check_slot
from bankapi.errors import ApiError, too_many_requests

Factor = LoginThrottle.Factor

_LOCKED_MESSAGES = {
    Factor.PASSWORD: "Too many failed sign-in attempts; try again later.",
    Factor.SECOND_FACTOR: "Too many wrong codes; try again later.",
    Factor.PASSKEY: "Too many failed passkey sign-ins; try again later.",
}
_CLIENT_MESSAGE = "Too many failed sign-in attempts from this client; try again later."


def _max_failures() -> int:
    return settings.AUTH_LOCKOUT_MAX_FAILURES


def _failure_window() -> timedelta:
    return timedelta(seconds=settings.AUTH_LOCKOUT_WINDOW_SECONDS)


def _lockout() -> timedelta:
    return timedelta(seconds=settings.AUTH_LOCKOUT_SECONDS)


# Looks for a key's row (see `_locked_row`). A retry means other requests created
# and deleted the row in between, so more than a couple never happen.
_ROW_TRIES = 5


def _locked_row(factor: Factor, program_id: uuid.UUID | None, email: str, now: datetime) -> LoginThrottle:
    """The key's row, created if missing, locked until the transaction ends.

    The row lock serialises concurrent attempts on one key: each sees the count
    the previous one left, so no more than MAX_FAILURES get through.
    """
    tries = 0
    while True:
        try:
            return LoginThrottle.objects.select_for_update().get_or_create(
                factor=factor,
                program_id=program_id,  # None matches IS NULL
                email=email,
                defaults={"window_started_at": now},
            )[0]
        except IntegrityError:
            # Our insert lost to a concurrent one, and a success deleted that row
            # before get_or_create could read it back (it then re-raises the
            # IntegrityError, its savepoint rolled back): look again.
            tries += 1
            if tries == _ROW_TRIES:
                raise


def _attempt(
    factor: Factor,
    program_id: uuid.UUID | None,
    email: str,
    now: datetime,
    judge: Callable[[], bool | None] | None = None,
) -> bool | None:
    """Count one attempt, or refuse it (429) while the key is locked.

    With a `judge`, the guess is judged under the row lock, and only a wrong one
    (False) is counted: a right one (True) forgets the count, a right one that
    is not a guess (None: a code already spent) leaves it as it was.
    """
    with transaction.atomic():
        throttle = _locked_row(factor, program_id, email, now)
        if throttle.locked_until is not None and throttle.locked_until > now:
            raise too_many_requests(_LOCKED_MESSAGES[factor], (throttle.locked_until - now).total_seconds())
        verdict = False if judge is None else judge()
        if verdict is True:
            throttle.delete()
            return True
        if verdict is None:
            return None
        window_over = throttle.window_started_at <= now - _failure_window()
        lock_over = throttle.locked_until is not None
        if window_over or lock_over:
            throttle.window_started_at, throttle.failures, throttle.locked_until = now, 0, None
        throttle.failures += 1
        if throttle.failures >= _max_failures():
            throttle.locked_until = now + _lockout()
        throttle.save()
        return False


def throttle_attempt(program_id: uuid.UUID | None, email: str, now: datetime) -> None:
    """Count one password attempt of the pair, or refuse it (429) while the pair is locked.

    Call before checking the password. The attempt that reaches the maximum sets
    the lock yet is still evaluated (a wrong password answers 401, a right one
    clears the pair); the next one is 429.
    """
    _attempt(Factor.PASSWORD, program_id, email, now)


def throttle_clear(program_id: uuid.UUID | None, email: str) -> None:
    """A correct password forgets the earlier password failures (not the code failures)."""
    LoginThrottle.objects.filter(
        factor=Factor.PASSWORD,
        program_id=program_id,  # type: ignore[misc]  # django-stubs rejects None; Django: IS NULL
        email=email,
    ).delete()


def second_factor_attempt(user: User, now: datetime | None = None) -> None:
    """Count one second-factor code of the user, or refuse it (429) while locked.

    Call before checking the code; on success call `second_factor_clear`.
    """
    _attempt(Factor.SECOND_FACTOR, user.program_id, user.email, now or timezone.now())


def second_factor_judge(
    user: User, judge: Callable[[], bool | None], now: datetime | None = None
) -> bool | None:
    """Judge one second-factor code of the user under its counter's row lock, or
    refuse it (429) while locked, the right code included.

    `judge` answers True for a right code (the count is forgotten), False for a
    wrong one (counted) and None for a right code already spent, as when two
    requests share one code: not a guess, so not counted. Judged under the lock,
    parallel guesses are still judged one at a time, at most MAX_FAILURES per
    window, and requests sharing a code cannot lock the user between them.
    """
    return _attempt(Factor.SECOND_FACTOR, user.program_id, user.email, now or timezone.now(), judge)


def second_factor_clear(user: User) -> None:
    """A correct code forgets the user's earlier wrong codes."""
    LoginThrottle.objects.filter(
        factor=Factor.SECOND_FACTOR,
        program_id=user.program_id,  # type: ignore[misc]  # django-stubs rejects None; Django: IS NULL
        email=user.email,
    ).delete()


def passkey_sign_in_attempt(user: User, now: datetime | None = None) -> None:
    """Count one verify-passkey sign-in of the user, or refuse it (429) while locked."""
    _attempt(Factor.PASSKEY, user.program_id, user.email, now or timezone.now())


def passkey_sign_in_clear(user: User) -> None:
    LoginThrottle.objects.filter(
        factor=Factor.PASSKEY,
        program_id=user.program_id,  # type: ignore[misc]  # django-stubs rejects None; Django: IS NULL
        email=user.email,
    ).delete()


def client_address(request: HttpRequest) -> str:
    """The address of the client a request comes from.

    The peer's, unless `TRUSTED_PROXY_COUNT` says how many proxies of ours
    append to X-Forwarded-For: the client is then the entry that many from the
    right (entries further left are whatever the client chose to send).
    """
    hops = settings.TRUSTED_PROXY_COUNT
    header: str = request.META.get("HTTP_X_FORWARDED_FOR", "")
    forwarded = [entry.strip() for entry in header.split(",")]
    forwarded = [entry for entry in forwarded if entry]
    if hops > 0 and forwarded:
        return forwarded[-min(hops, len(forwarded))][:254]
    peer: str = request.META.get("REMOTE_ADDR", "")
    return peer[:254]


def client_key(address: str) -> str:
    """The key the client throttle counts `address` under: an IPv6 address by its
    /64 (one subscriber's block: a client has all of it and could otherwise
    start afresh from each of its addresses), an IPv4 one, or an IPv4-mapped
    IPv6 one, as the IPv4 address, anything else as it is."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


def _client_attempt(key: str, now: datetime) -> None:
    """Count one attempt of the client, in flight, or refuse it (429) while the
    client is throttled.

    Attempts in flight count toward the throttle as failures do (counted up
    front, see above), but are none: `_client_settle` turns each into a failure
    or forgets it, and an address whose only attempts are in flight has no
    recent failure, so its concurrent sign-ins wait as ordinary traffic. The
    throttle is in force while failures and attempts in flight reach the
    maximum; it lifts when the window ends.
    """
    window = timedelta(seconds=settings.AUTH_CLIENT_WINDOW_SECONDS)
    with transaction.atomic():
        throttle = _locked_row(Factor.CLIENT, None, key, now)
        if throttle.window_started_at <= now - window:
            throttle.window_started_at, throttle.failures, throttle.locked_until = now, 0, None
            # None in flight can be older than a window: forget those a killed process left.
            throttle.in_flight, throttle.refusals = 0, 0
        if throttle.failures + throttle.in_flight >= settings.AUTH_CLIENT_MAX_FAILURES:
            window_end = throttle.window_started_at + window
            throttle.locked_until = window_end
            throttle.save()
            raise too_many_requests(_CLIENT_MESSAGE, (window_end - now).total_seconds())
        throttle.in_flight += 1
        throttle.save()


def _client_rows(key: str) -> QuerySet[LoginThrottle]:
    return LoginThrottle.objects.filter(
        factor=Factor.CLIENT,
        program_id=None,  # type: ignore[misc]  # django-stubs rejects None; Django: IS NULL
        email=key,
    )


def _client_settle(key: str, *, failed: bool = False, succeeded: bool = False) -> None:
    """An attempt of the client is decided: no longer in flight; a failure if it
    failed; a success forgets the client's refusals (a person who got in)."""
    rows = _client_rows(key)
    if failed:
        rows.update(failures=F("failures") + 1)
    if succeeded:
        rows.filter(refusals__gt=0).update(refusals=0)
    rows.filter(in_flight__gt=0).update(in_flight=F("in_flight") - 1)


@contextmanager
def client_throttle(request: HttpRequest) -> Iterator[None]:
    """Count a sign-in step of this request's client as a failure unless it succeeds
    (see `client_throttle_address`)."""
    with client_throttle_address(client_address(request)):
        yield


@contextmanager
def client_throttle_address(address: str) -> Iterator[None]:
    """Count a sign-in step of the client at `address` as a failure unless it succeeds.

    Failures are refused credentials (401) and refusals of a locked user (429):
    a client hammering a locked account keeps counting. Bad input (400) and
    successes are forgiven, and so is a refusal for want of a password-check
    slot inside: `sign_in_slot`, taken around this, counts those. Use outside
    `transaction.atomic`, around the service.
    """
    key = client_key(address)
    _client_attempt(key, timezone.now())
    try:
        yield
    except ApiError as error:
        failed = error.status in (401, 429) and not isinstance(error, PasswordChecksBusy)
        _client_settle(key, failed=failed)
        raise
    except BaseException:
        _client_settle(key)
        raise
    _client_settle(key, succeeded=True)


def client_rank(address: str) -> tuple[int, int]:
    """The failures and the uncounted refusals of the client at `address` in its
    current window ((0, 0) when none); attempts still in flight are neither."""
    row = _client_rows(client_key(address)).values_list("failures", "refusals", "window_started_at").first()
    window = timedelta(seconds=settings.AUTH_CLIENT_WINDOW_SECONDS)
    if row is None or row[2] <= timezone.now() - window:
        return (0, 0)
    return (row[0], row[1])


def _client_refused(key: str, now: datetime, *, failures: int) -> None:
    """Count a sign-in refused for want of a password-check slot: a failure of a
    client that has failures, else a refusal (no failure, it only orders the
    client behind those never refused).

    Up to the throttle's maximum, where the client is throttled for the rest of
    its window whatever else it does: a flood refused for hours would otherwise
    outgrow the counter.
    """
    window = timedelta(seconds=settings.AUTH_CLIENT_WINDOW_SECONDS)
    with transaction.atomic():
        throttle = _locked_row(Factor.CLIENT, None, key, now)
        if throttle.window_started_at <= now - window:
            throttle.window_started_at, throttle.failures, throttle.locked_until = now, 0, None
            throttle.in_flight, throttle.refusals = 0, 0
        if failures == 0:
            throttle.refusals = min(throttle.refusals + 1, settings.AUTH_CLIENT_MAX_FAILURES)
        elif throttle.failures >= settings.AUTH_CLIENT_MAX_FAILURES:
            return
        else:
            throttle.failures += 1
        throttle.save()


@contextmanager
def sign_in_slot(address: str) -> Iterator[None]:
    """A password-check slot for a sign-in from the client at `address`, or 429.

    While it waits, the sign-in is served by its address's recent failures,
    fewest first: under a flood of failed sign-ins from many addresses, each of
    them soon has failures and a real user's address has none, so the user is
    served first instead of drawing lots with the flood. An address with no
    recent failure waits as long as the checks ahead of it take (up to
    `PASSWORD_CHECK_CLEAN_WAIT_SECONDS`), and if refused all the same (the
    wait ran out, or the process's waiters are all such sign-ins) that is no
    failure: it only ranks the address behind those never refused, so that a
    flood's addresses do not keep the queue from real users while none of them
    has failed yet (a success forgets it). An address with failures waits
    briefly, and its refusal
    counts as one more failure of the address (never of the e-mail: the
    password was not tried), so a flood that is only ever refused still reaches
    the client throttle and ranks last. Use outside `transaction.atomic`.
    """
    key = client_key(address)
    ranks: list[tuple[int, int]] = []

    def rank() -> tuple[int, int]:
        ranks.append(client_rank(key))
        return ranks[-1]

    entered = False
    try:
        with password_check_slot(rank):
            entered = True
            yield
    except PasswordChecksBusy:
        if not entered:
            _client_refused(key, timezone.now(), failures=ranks[0][0] if ranks else 0)
        raise


def throttle_purge(now: datetime) -> int:
    """Forget counters whose window and lock are both over (unknown e-mails pile up otherwise)."""
    window = max(settings.AUTH_LOCKOUT_WINDOW_SECONDS, settings.AUTH_CLIENT_WINDOW_SECONDS)
    stale = LoginThrottle.objects.filter(window_started_at__lte=now - timedelta(seconds=window)).filter(
        Q(locked_until__isnull=True) | Q(locked_until__lte=now)
    )
    return stale.delete()[0]
