"""A test clock shared by the processes of one test: the test's own (and the live
server in it), a server it started, and the Pythons its shell runs.

The README's walk-throughs take a TOTP code once per 30-second step (the
service refuses a code of a step at or before the last one it accepted), and
their `code` helper waits for the next step where the shell has spent the
current one. Run against the real clock those waits were most of the README
tests' time. Under a shared clock the helper's wait moves the clock instead:
every process of the test reads the real time plus one offset, kept in a small
file, and the shell's Pythons move that offset when they sleep. The service is
unchanged: it reads the time as always (time-machine patches the readings), so
a code is judged as in production, only against a clock that has moved on.

Use `shared_clock()` in the test (it follows the clock itself, for a live
server in the test's process), give the shell the clock's `environment()`, and
run Pythons as `python_command(...)` (a server: sleeps do not move the clock;
the shell's Pythons: `sleep_moves=True`).

As a program: `python shared_clock.py [--sleep-moves] (-c CODE | -m MODULE | - | SCRIPT) [ARG...]`
runs as `python` would, following the clock named by $BANKAPI_TEST_CLOCK (the
real clock where it is unset).
"""

import mmap
import os
import runpy
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import _time_machine
import time_machine

ENVIRONMENT = "BANKAPI_TEST_CLOCK"
_OFFSET = struct.Struct("<q")  # nanoseconds ahead of the real clock


class SharedClock:
    """The offset file: nanoseconds ahead of the real clock, read and moved by every
    process that follows it."""

    def __init__(self, path: Path):
        self.path = path
        with open(path, "r+b") as file:
            self._map = mmap.mmap(file.fileno(), _OFFSET.size)

    @classmethod
    def create(cls, path: Path) -> "SharedClock":
        path.write_bytes(_OFFSET.pack(0))
        return cls(path)

    @property
    def offset_ns(self) -> int:
        return _OFFSET.unpack_from(self._map)[0]

    @property
    def offset(self) -> float:
        """Seconds ahead of the real clock."""
        return self.offset_ns / 1e9

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            _OFFSET.pack_into(self._map, 0, self.offset_ns + round(seconds * 1e9))

    def environment(self) -> dict[str, str]:
        return {ENVIRONMENT: str(self.path)}

    def close(self) -> None:
        self._map.close()


@contextmanager
def following(clock: SharedClock, *, sleep_moves: bool = False) -> Iterator[SharedClock]:
    """This process reads the time as the clock does: its own time when this began
    (a time-machine travel already under way included), as much later as really
    passed since, plus the clock's offset (every move of it, before and since).

    time-machine asks its current traveller for the time (`Traveller.time_ns`);
    ours adds the shared offset. With `sleep_moves`, `time.sleep` moves the clock
    by its argument instead of waiting (for the shell's Pythons, never a server).
    """
    start = time.time_ns()
    travel = time_machine.travel(start / 1e9, tick=True)
    traveller = travel.start()
    real_start = _time_machine.original_time_ns()

    def time_ns() -> int:
        elapsed = _time_machine.original_time_ns() - real_start
        return start + elapsed + clock.offset_ns

    traveller.time_ns = time_ns  # type: ignore[method-assign]
    sleep = time.sleep
    if sleep_moves:
        time.sleep = clock.advance
    try:
        yield clock
    finally:
        time.sleep = sleep
        travel.stop()


@contextmanager
def shared_clock() -> Iterator[SharedClock]:
    """A new clock, at the real time (or this process's travelled one), in a temporary
    folder of its own; this process follows it meanwhile."""
    with tempfile.TemporaryDirectory(prefix="shared-clock-") as folder:
        clock = SharedClock.create(Path(folder) / "offset")
        try:
            with following(clock):
                yield clock
        finally:
            _report(clock)
            clock.close()


def _report(clock: SharedClock) -> None:
    """With $SHARED_CLOCK_REPORT naming a file, one line there per clock: the test
    and how far its clock moved (the seconds of waiting it saved)."""
    report = os.environ.get("SHARED_CLOCK_REPORT")
    if report:
        with open(report, "a") as file:
            file.write(f"{clock.offset:.1f} {os.environ.get('PYTEST_CURRENT_TEST', '?')}\n")


def python_command(*, sleep_moves: bool = False) -> list[str]:
    """The command line that runs Python as `python` would, following the clock that
    $BANKAPI_TEST_CLOCK names (where set)."""
    return [sys.executable, __file__, *(["--sleep-moves"] if sleep_moves else [])]


def _run(arguments: list[str]) -> None:
    """Run what `python ARGUMENTS` runs: `-c CODE`, `-m MODULE`, `-` (stdin) or a script."""
    first, rest = arguments[0], arguments[1:]
    if first == "-c":
        sys.argv = ["-c", *rest[1:]]
        exec(compile(rest[0], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
    elif first == "-m":
        sys.argv = [rest[0], *rest[1:]]
        runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
    elif first == "-":
        sys.argv = ["-", *rest]
        exec(compile(sys.stdin.read(), "<stdin>", "exec"), {"__name__": "__main__"})  # noqa: S102
    else:
        sys.argv = arguments
        sys.path[0] = os.path.dirname(os.path.abspath(first))
        runpy.run_path(first, run_name="__main__")


def main() -> None:
    arguments = sys.argv[1:]
    sleep_moves = arguments[:1] == ["--sleep-moves"]
    arguments = arguments[1:] if sleep_moves else arguments
    # Run as a script, this file's folder is first on the path: the project's root
    # is what `python` run from it would have.
    sys.path[0] = os.getcwd()
    path = os.environ.get(ENVIRONMENT)
    if not path:
        _run(arguments)
        return
    clock = SharedClock(Path(path))
    with following(clock, sleep_moves=sleep_moves):
        _run(arguments)


if __name__ == "__main__":
    main()
