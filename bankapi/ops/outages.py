"""Outages of what the service depends on (the database, the broker): how they are
recognised, answered and logged.

- The database cannot be reached (PostgreSQL restarting or killed, PgBouncer
  restarting, the network): every route answers 503 SERVICE_UNAVAILABLE with
  `Retry-After` in the error envelope (`bankapi.http.handlers`), never a 500, since
  nothing is wrong with the request or the code.
- A log line per failed request (or per relay pass, five a second) would bury the
  one line that matters under thousands during a few seconds' outage. Outage
  lines are warnings without a traceback, written at most once per
  `OUTAGE_LOG_INTERVAL` seconds per kind and process, the next one saying how
  many were left out in between.
"""

import logging
import threading
import time
from typing import Any

from django.db import InterfaceError, OperationalError

# Seconds a client is asked to wait before retrying while the database is away:
# a restart behind PgBouncer takes about a second.
DATABASE_RETRY_AFTER_SECONDS = 1
# At most one outage line per kind and process in this many seconds.
OUTAGE_LOG_INTERVAL = 10.0

# SQLSTATEs of a server or pooler that cannot serve at all (not of a statement):
# class 08 (connection exceptions; PgBouncer answers its own errors, "server
# login retry" or "query_wait_timeout", as 08P01), and the server shutting down,
# crashed, starting up, or out of connections.
_UNAVAILABLE_STATES = {"57P01", "57P02", "57P03", "53300"}


def database_unavailable(error: BaseException | None) -> bool:
    """Whether `error` says the database could not be reached or dropped the
    connection, rather than refusing a statement (a deadlock, a constraint, a
    timeout are other failures, answered as before)."""
    if not isinstance(error, (OperationalError, InterfaceError)):
        return False
    if isinstance(error, InterfaceError):
        # Django's "connection already closed": the server went away under it.
        return True
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    cause = error.__cause__
    if not isinstance(cause, psycopg.Error):
        return False
    state = cause.sqlstate
    # No SQLSTATE: a failure on the client's side of the connection (refused,
    # reset, the server closed it unexpectedly), not an answer of the server.
    return state is None or state.startswith("08") or state in _UNAVAILABLE_STATES


class _Throttle:
    """When each kind of outage line was last written, and how many were left out since."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: dict[str, float] = {}
        self.skipped: dict[str, int] = {}

    def admit(self, kind: str) -> int | None:
        """None: leave this line out; else the number of lines left out before it."""
        now = time.monotonic()
        with self.lock:
            last = self.last.get(kind)
            if last is not None and now - last < OUTAGE_LOG_INTERVAL:
                self.skipped[kind] = self.skipped.get(kind, 0) + 1
                return None
            self.last[kind] = now
            return self.skipped.pop(kind, 0)


_throttle = _Throttle()


def outage_log(
    logger: logging.Logger, kind: str, message: str, *args: Any, error: BaseException | None = None
) -> None:
    """One warning line, unless a line of this `kind` was written by this process in
    the last `OUTAGE_LOG_INTERVAL` seconds; the error's type and text close it, no
    traceback (an outage is not a bug)."""
    skipped = _throttle.admit(kind)
    if skipped is None:
        return
    text = message % args if args else message
    if error is not None:
        said = str(error).strip().splitlines()
        text += f": {type(error).__name__}: {said[0] if said else ''}"
    if skipped:
        text += f" ({skipped} more like it in the last {OUTAGE_LOG_INTERVAL:.0f} s not logged)"
    logger.warning("%s", text)


def failure_log(logger: logging.Logger, kind: str, message: str, *args: Any) -> None:
    """Inside an `except` block, for a loop that retries on its own: an outage
    (`database_unavailable`, or the broker away) as `outage_log` writes it, any
    other error with its traceback, at the same pace."""
    import sys

    error = sys.exc_info()[1]
    if database_unavailable(error) or broker_unavailable(error):
        outage_log(logger, kind, message, *args, error=error)
        return
    skipped = _throttle.admit(kind)
    if skipped is None:
        return
    suffix = f" ({skipped} more like it not logged)" if skipped else ""
    logger.exception(message + suffix, *args)


def broker_unavailable(error: BaseException | None) -> bool:
    """Whether `error` says the Celery broker (Redis) could not be reached."""
    if error is None:
        return False
    from kombu.exceptions import OperationalError as KombuOperationalError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    away = (KombuOperationalError, RedisConnectionError, RedisTimeoutError, ConnectionError)
    return isinstance(error, away)


def outage_behind(error: BaseException | None) -> str | None:
    """ "database" or "broker" when `error`, or an error it was raised from or
    while handling (a scheduler's wrapper, a retry's), says that dependency is
    away; None for anything else."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if database_unavailable(error):
            return "database"
        if broker_unavailable(error):
            return "broker"
        error = error.__cause__ or error.__context__
    return None


def _error_among(args: Any) -> BaseException | None:
    """The error a line names among its arguments, without a traceback (a
    worker's "Cannot connect to redis://...: <error>. Trying again in 4 s")."""
    values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else ()
    return next((value for value in values if isinstance(value, BaseException)), None)


class OutageLineFilter(logging.Filter):
    """A log handler's filter: a line logged with the traceback of an outage
    becomes one warning line, throttled as `outage_log` throttles.

    Code of our own logs an outage with `outage_log`; Celery does not: a task
    that meets the database away is logged by Celery's tracer with its
    traceback ("Task ... raised unexpected"), beat's failure to send a task
    with Redis away with its traceback and the stack ("Couldn't apply
    scheduled task"), a worker losing its broker likewise, and a worker or beat
    retrying its broker writes an error line per attempt. On the console
    handler, this covers every task, every process and every library alike: the
    first line of the message, the error's type and text, at WARNING, at most one
    per logger and dependency every `OUTAGE_LOG_INTERVAL` seconds, the next saying
    how many were left out. Any other error keeps its traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else _error_among(record.args)
        dependency = outage_behind(error)
        if dependency is None:
            return True
        skipped = _throttle.admit(f"{dependency}:{record.name}")
        if skipped is None:
            return False
        lines = record.getMessage().strip().splitlines()
        text = f"{dependency.capitalize()} unavailable: {lines[0] if lines else ''}"
        said = str(error).strip().splitlines()
        if said and said[0] not in text:
            text += f": {type(error).__name__}: {said[0]}"
        if skipped:
            text += f" ({skipped} more like it in the last {OUTAGE_LOG_INTERVAL:.0f} s not logged)"
        record.msg, record.args = text, None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


class _Backoff:
    """Whether to ask the database now, for a reader that can do without it (the
    gauges of a scrape): not for `DATABASE_BACKOFF_SECONDS` after it was away."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failed_at: float | None = None

    def open(self) -> bool:
        with self.lock:
            return self.failed_at is None or time.monotonic() - self.failed_at >= DATABASE_BACKOFF_SECONDS

    def failed(self) -> None:
        with self.lock:
            self.failed_at = time.monotonic()

    def answered(self) -> None:
        with self.lock:
            self.failed_at = None


DATABASE_BACKOFF_SECONDS = 15.0
database_backoff = _Backoff()


def outages_forget() -> None:
    """Start counting afresh (tests)."""
    with _throttle.lock:
        _throttle.last.clear()
        _throttle.skipped.clear()
    database_backoff.answered()


def redis_answers(timeout: float) -> bool:
    """Whether the configured Redis answers a PING within `timeout` seconds."""
    import redis
    from django.conf import settings

    url = str(settings.REDIS_URL)
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        client.close()


# Kombu's Redis transport keeps a queue's messages of each priority step in a
# list of its own: the queue's name, and the name with this separator and the step.
_PRIORITY_SEPARATOR = "\x06\x16"
_PRIORITY_STEPS = (3, 6, 9)


def redis_queue_lengths(queues: list[str], timeout: float) -> dict[str, int]:
    """How many messages wait in each Celery queue on the configured Redis (all
    its priority lists), in one round trip; raises OSError when Redis does not
    answer within `timeout` seconds."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(
        str(settings.REDIS_URL), socket_connect_timeout=timeout, socket_timeout=timeout
    )
    keys = {
        queue: [queue, *(f"{queue}{_PRIORITY_SEPARATOR}{step}" for step in _PRIORITY_STEPS)]
        for queue in queues
    }
    try:
        pipeline = client.pipeline(transaction=False)
        for queue in queues:
            for key in keys[queue]:
                pipeline.llen(key)
        counts = iter(pipeline.execute())
        return {queue: sum(next(counts) for _ in keys[queue]) for queue in queues}
    except redis.exceptions.RedisError as error:
        raise OSError(f"Redis did not answer: {error}") from error
    finally:
        client.close()
