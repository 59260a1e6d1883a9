"""A test's clock kept off the end of a UTC day, for tests that read "today" more
than once (a statement of today, a schedule anchored today): a run that crosses
midnight would otherwise read two different days."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, time, timedelta

import time_machine

MARGIN = timedelta(minutes=15)


@contextmanager
def clear_of_midnight(margin: timedelta = MARGIN) -> Iterator[time_machine.Traveller]:
    """The clock, ticking: where less than `margin` is left of the current UTC day,
    it starts just after the next midnight instead (forward only, as real time goes:
    what was written before stays in the past), so a test shorter than `margin`
    reads one day throughout."""
    now = datetime.now(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), time(), UTC)
    start = midnight + timedelta(seconds=1) if midnight - now < margin else now
    with time_machine.travel(start, tick=True) as traveller:
        yield traveller
