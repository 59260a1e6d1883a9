"""Requests raced against each other: each in its own thread, with its own
database connection (so PostgreSQL sees real concurrent sessions).

`run_at_once` releases every call together by a barrier (the sharpest race of a
few contenders); `run_on_pool` runs many calls on a fixed number of threads (a
crowd larger than the server would take at once)."""

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connection

from tests.support.openapi import openapi_document


def on_own_connection(call: Callable[[int], Any], index: int) -> Any:
    """Run `call(index)` in a worker thread, which has its own database connection."""
    try:
        return call(index)
    finally:
        connection.close()


def _answers_checkable_from_threads() -> None:
    # Every response is checked against the OpenAPI document, built on first use:
    # build it here, as drf-spectacular's generator is not safe to run from
    # several threads at once.
    openapi_document()


def run_at_once(count: int, call: Callable[[int], Any]) -> list:
    """Run `call(index)` from `count` threads released together; their results in
    order. A call that raises fails the race with its exception."""
    _answers_checkable_from_threads()
    start = threading.Barrier(count)

    def worker(index: int) -> Any:
        start.wait()
        return on_own_connection(call, index)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(worker, range(count)))


def run_on_pool(count: int, call: Callable[[int], Any], *, threads: int) -> list:
    """Run `call(index)` for `count` indexes on `threads` threads; their results in
    order. A call that raises fails the run with its exception."""
    _answers_checkable_from_threads()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda index: on_own_connection(call, index), range(count)))
