"""gunicorn settings read from the working directory: the metrics directory's
life cycle (see bankapi.metrics). Command-line options still win."""

from typing import Any


def on_starting(server: Any) -> None:
    from bankapi.metrics_files import multiprocess_directory_reset

    multiprocess_directory_reset()


def child_exit(server: Any, worker: Any) -> None:
    from bankapi.metrics_files import mark_process_dead

    mark_process_dead(worker.pid)
