"""The suite's own test clocks: the clock a test shares with the processes it starts
(tests/support/shared_clock.py) and the one kept off a day's end
(tests/support/day_clock.py)."""

import os
import subprocess
import time
from datetime import UTC, date, datetime, timedelta

import time_machine

from tests.support.day_clock import clear_of_midnight
from tests.support.shared_clock import python_command, shared_clock

READ = "import time; print(time.time())"


def read_in_another_process(clock, code: str = READ, *, sleep_moves: bool = False) -> float:
    result = subprocess.run(
        [*python_command(sleep_moves=sleep_moves), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **clock.environment()},
        check=True,
    )
    return float(result.stdout.split()[-1])


def test_a_process_started_after_the_clock_moved_reads_the_moved_time():
    with shared_clock() as clock:
        clock.advance(3600)
        here = time.time()
        there = read_in_another_process(clock)

    assert 3600 <= there - (here - 3600) < 3600 + 30  # an hour on, give or take its start
    assert abs(time.time() - (here - 3600)) < 30  # the test's own clock is real again


def test_a_sleep_in_the_shells_python_moves_every_process_instead_of_waiting():
    with shared_clock() as clock:
        before = time.time()
        there = read_in_another_process(
            clock, "import time; time.sleep(90); print(time.time())", sleep_moves=True
        )
        here = time.time()
        moved = clock.offset

    assert moved == 90
    assert here - before >= 90 and there - before >= 90
    # A server's Python reads the clock but its sleeps are real ones.
    with shared_clock() as clock:
        read_in_another_process(clock, "import time; time.sleep(0.01); print(time.time())")
        assert clock.offset == 0


def test_the_clock_starts_after_midnight_where_the_day_is_nearly_over():
    with time_machine.travel(datetime(2027, 3, 1, 23, 55, tzinfo=UTC), tick=False):
        with clear_of_midnight(timedelta(minutes=15)):
            assert datetime.now(UTC).date() == date(2027, 3, 2)
            assert datetime.now(UTC) <= datetime(2027, 3, 2, 0, 1, tzinfo=UTC)


def test_the_clock_is_the_real_one_far_from_midnight():
    with time_machine.travel(datetime(2027, 3, 1, 12, 0, tzinfo=UTC), tick=False):
        with clear_of_midnight(timedelta(minutes=15)):
            assert datetime(2027, 3, 1, 12, 0, tzinfo=UTC) <= datetime.now(UTC)
            assert datetime.now(UTC) < datetime(2027, 3, 1, 12, 1, tzinfo=UTC)
