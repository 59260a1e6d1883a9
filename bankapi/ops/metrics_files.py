"""The files of prometheus_client's multiprocess mode, for process managers.

Free of Django: gunicorn's master calls these from `deploy/gunicorn.conf.py` before
(or without) loading the application.
"""

import os
import re

from prometheus_client import multiprocess


def multiprocess_directory() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def multiprocess_directory_ensure() -> None:
    """The directory exists before the first count is written to it: a Celery
    worker may start before gunicorn, which would otherwise create it."""
    directory = multiprocess_directory()
    if directory:
        os.makedirs(directory, exist_ok=True)


def mark_process_dead(pid: int) -> None:
    """For the gunicorn master when a worker exits: its live gauges go away (its
    counts stay, summed into every later scrape)."""
    if multiprocess_directory():
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def multiprocess_directory_reset() -> None:
    """When the service starts: drop the files of processes that are gone (an
    earlier run), whose counts would otherwise be summed into this run's. Files of
    live processes stay: a Celery worker started before gunicorn keeps counting."""
    directory = multiprocess_directory()
    if not directory:
        return
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        found = _DB_FILE.match(name)
        if found and not _alive(int(found.group(1))):
            os.remove(os.path.join(directory, name))


_DB_FILE = re.compile(r"^\w+?_(\d+)\.db$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
