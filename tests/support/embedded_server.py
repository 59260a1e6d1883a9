"""A real gunicorn serving the project on the embedded default, for tests that need
what Django's test client cannot send (a chunked body over a real socket)."""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.shared_clock import SharedClock, python_command

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def embedded_gunicorn(var_dir: Path, clock: SharedClock | None = None, **env: str) -> Iterator[int]:
    """One gunicorn worker on a port the kernel picks, with the embedded default's
    settings (no DATABASE_URL or REDIS_URL) and `env` on top; yields the port. With
    `clock`, the server reads the time from that shared clock (tests/support/shared_clock.py)."""
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    environment.update(BANKAPI_VAR_DIR=str(var_dir), BANKAPI_ENV="development", PYTHONUNBUFFERED="1", **env)
    gunicorn = [str(Path(sys.executable).parent / "gunicorn")]
    if clock is not None:
        environment.update(clock.environment())
        gunicorn = [*python_command(), "-m", "gunicorn"]
    server = subprocess.Popen(  # noqa: S603
        [*gunicorn, "-b", "127.0.0.1:0", "-w", "1", "config.wsgi"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        port = None
        for line in server.stdout or ():
            found = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        assert port, "gunicorn did not start"
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)
