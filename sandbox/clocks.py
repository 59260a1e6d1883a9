"""Test clocks: make one, read them, advance one.

An advance runs, in time order, everything that falls due for the clock's
customers in `(frozen_time, to]`, each at its own moment and while the clock
reads that moment (`bankapi.clock.clock_moment`): at each moment the expiry
sweeps first (settings.SANDBOX_CLOCK_EXPIRY_SWEEPS, the same functions the real
sweeps are), then, at 02:00 UTC of a day, that day's scheduled-payment run (the
runner beat's run calls, for the clock's customers only). After each moment
that did something (and every few seconds as a heartbeat) the clock's
`frozen_time` is that moment: an advance whose process dies leaves the clock at
a moment it fully ran, every later one being either undone or idempotent, so
the next advance picks up from there.

One advance at a time per clock: the advance claims the clock with one
conditional UPDATE that commits before any work (an advance already running,
whose heartbeat is fresh, makes it 409 INVALID_STATE), and beats after every
moment. A heartbeat older than `ADVANCE_STALL` means the advance died.
"""

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.module_loading import import_string

from bankapi.clock import clock_moment
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Program, TestClock
from bankapi.scope import Scope, get_or_not_found
from bankapi.test_clocks import ADVANCE_STALL
from bankapi.transactions import outside_transaction_require
from payments.errors import PaymentErrorCode
from payments.services.schedules import RUN_HOUR_UTC, scheduled_payments_run_for_clock

# How far a clock may be set from now, and how far one advance may move it.
CLOCK_RANGE = timedelta(days=366)
# How often a running advance beats when its moments are quiet (well within ADVANCE_STALL).
BEAT_EVERY = timedelta(seconds=5)

# An expiry sweep: `(now, clock_id) -> how many expired`. One that can tell when
# its things expire may also have `due_times(clock_id, after, until)`: those
# times become moments of an advance, so each thing expires at its own time.
ExpirySweep = Callable[[datetime, uuid.UUID | None], int]


def expiry_sweeps() -> tuple[ExpirySweep, ...]:
    """The registry of expiry sweeps an advance runs at each moment."""
    return tuple(import_string(path) for path in settings.SANDBOX_CLOCK_EXPIRY_SWEEPS)


def clocks_of(scope: Scope) -> QuerySet[TestClock]:
    """The clocks of the caller's program and environment."""
    return TestClock.objects.for_scope(scope)


def clock_of(scope: Scope, clock_id: str | None) -> TestClock:
    """A clock of the caller's program, or 404 (another program's included)."""
    return get_or_not_found(clocks_of(scope), clock_id, "Test clock")


def clock_create(*, scope: Scope, frozen_time: datetime, name: str | None) -> TestClock:
    """A new clock reading `frozen_time`, within `CLOCK_RANGE` of now; at most
    settings.SANDBOX_CLOCKS_MAX per program (422 LIMIT_EXCEEDED)."""
    now = timezone.now()
    if abs(frozen_time - now) > CLOCK_RANGE:
        raise validation_error("frozenTime", "frozenTime must be within 366 days of now, either way.")
    with transaction.atomic():
        # The program's row lock: two creates at the cap cannot both pass the count.
        Program.objects.select_for_update().filter(id=scope.program_id).first()
        if clocks_of(scope).count() >= settings.SANDBOX_CLOCKS_MAX:
            raise ApiError(
                PaymentErrorCode.LIMIT_EXCEEDED,
                f"A program may have at most {settings.SANDBOX_CLOCKS_MAX} test clocks.",
            )
        return TestClock.objects.create(
            program_id=scope.program_id, sandbox=True, name=name, frozen_time=frozen_time.astimezone(UTC)
        )


def advance_moments(start: datetime, to: datetime, clock_id: uuid.UUID | None = None) -> list[datetime]:
    """The moments an advance from `start` to `to` runs, in time order: the
    02:00 UTC of every day crossed in `(start, to]`, the times things of the
    clock's customers expire in it (a sweep that can tell them has `due_times`),
    and `to` itself."""
    moments = {to}
    day = start.astimezone(UTC).date()
    while (run_at := datetime.combine(day, time(RUN_HOUR_UTC), tzinfo=UTC)) <= to:
        if run_at > start:
            moments.add(run_at)
        day += timedelta(days=1)
    if clock_id is not None:
        for sweep in expiry_sweeps():
            due_times = getattr(sweep, "due_times", None)
            if due_times is not None:
                moments.update(moment.astimezone(UTC) for moment in due_times(clock_id, start, to))
    return sorted(moments)


def _claim(clock: TestClock, to: datetime) -> TestClock:
    """Mark the clock advancing to `to`, committed at once, or 409 if an advance
    of it is running. `to` is checked against the clock as claimed."""
    now = timezone.now()
    with transaction.atomic():
        locked = TestClock.objects.select_for_update().get(pk=clock.pk)
        if (
            locked.advancing_to is not None
            and locked.heartbeat_at
            and locked.heartbeat_at > now - ADVANCE_STALL
        ):
            raise ApiError(ErrorCode.INVALID_STATE, "This test clock is already advancing.")
        if to <= locked.frozen_time:
            raise validation_error("to", "to must be after the clock's frozenTime.")
        if to - locked.frozen_time > CLOCK_RANGE:
            raise validation_error("to", "to must be at most 366 days after the clock's frozenTime.")
        locked.advancing_to, locked.heartbeat_at = to, now
        locked.save(update_fields=["advancing_to", "heartbeat_at", "updated_at"])
        return locked


def _moment_done(clock: TestClock, moment: datetime, to: datetime) -> None:
    """The clock now reads `moment` (fully run) and the advance is alive; if
    another advance took the clock over (this one stalled), stop."""
    now, last = timezone.now(), moment == to
    done = TestClock.objects.filter(pk=clock.pk, advancing_to=to).update(
        frozen_time=moment,
        advancing_to=None if last else to,
        heartbeat_at=None if last else now,
        updated_at=now,
    )
    if not done:
        raise ApiError(ErrorCode.INVALID_STATE, "Another advance took this test clock over.")


def _run_moment(clock_id: uuid.UUID, moment: datetime) -> int:
    """Everything due at `moment` for the clock's customers: expiries, then the
    day's schedule run when `moment` is its 02:00 UTC. How many things it did."""
    done = 0
    with clock_moment(clock_id, moment):
        for sweep in expiry_sweeps():
            done += sweep(moment, clock_id)
        if moment.time() == time(RUN_HOUR_UTC):
            done += scheduled_payments_run_for_clock(moment.date(), clock_id).runs
    return done


def clock_advance(*, clock: TestClock, to: datetime) -> TestClock:
    """Advance the clock to `to` (see the module). Outside any transaction:
    each moment commits on its own."""
    outside_transaction_require("clock_advance")
    to = to.astimezone(UTC)
    claimed = _claim(clock, to)
    beaten = timezone.now()
    try:
        for moment in advance_moments(claimed.frozen_time, to, claimed.id):
            did = _run_moment(claimed.id, moment)
            time_now = timezone.now()
            # A moment that did something is recorded at once; quiet ones only
            # as a heartbeat (a crash then re-runs them, finding nothing to do).
            if did or moment == to or time_now - beaten >= BEAT_EVERY:
                _moment_done(claimed, moment, to)
                beaten = time_now
    except Exception:
        # Ready again at once, at the last moment fully run (the error is the caller's).
        TestClock.objects.filter(pk=clock.pk, advancing_to=to).update(advancing_to=None, heartbeat_at=None)
        raise
    return TestClock.objects.get(pk=clock.pk)
