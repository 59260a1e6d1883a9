"""Request budgets: how many requests one key (an access or id token, or a client
address) may make per window.

Fixed windows of `REQUEST_BUDGET_WINDOW_SECONDS`, aligned on the clock and the
same for every key: a client may spend up to twice its budget across a window
boundary, which is fine for a budget meant to stop floods, not to meter.

Where the count lives:

- With `REDIS_URL`, in Redis, so every process and host of a deployment shares
  it: INCR and EXPIRE of the window's key in one server-side script (EVALSHA),
  one command and one round trip per request, atomic (no read-then-write race
  between processes), on a connection each thread keeps (not the client's
  pool). A MULTI pipeline did the same with four commands, and cost the
  request several times the Python. If Redis
  cannot be reached the request is served and a warning logged (one per outage
  and process every few seconds, no traceback): the budget is a
  guard against floods, and refusing every request while Redis is down would be
  the outage it exists to prevent (readiness reports Redis meanwhile).
- Without it (the embedded default), in this process's memory: a dict under a
  lock, emptied when the window turns. No round trip at all.
"""

import hashlib
import logging
import os
import threading
import time
from functools import cache
from typing import Any

import redis
from django.conf import settings
from redis.exceptions import NoScriptError

from bankapi.ops.outages import outage_log

logger = logging.getLogger("authn.request_budget")

_KEY_PREFIX = "bankapi:request-budget"


class _LocalCounts:
    """The counts of the current window in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._window = -1
        self._counts: dict[str, int] = {}

    def add_one(self, key: str, window: int) -> int:
        with self._lock:
            if window != self._window:
                # A new window starts empty: earlier windows' counts are never read again.
                self._window, self._counts = window, {}
            count = self._counts.get(key, 0) + 1
            self._counts[key] = count
            return count


_local = _LocalCounts()


@cache
def _redis_client(url: str) -> redis.Redis:
    # The connection settings of the URL (address, database, timeouts), parsed once.
    return redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)


# The key names its window, so it only has to outlive it (ARGV[1] seconds).
_ADD_ONE = """
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return count
"""
_ADD_ONE_SHA = hashlib.sha1(_ADD_ONE.encode()).hexdigest()  # noqa: S324 (Redis names a script so)

# Each thread's own connection: a request sends its one command on it and reads
# the answer, without the client's pool, retry and per-command bookkeeping
# (two thirds of what counting cost a request). Made anew in a forked process.
_threads = threading.local()


def _connection(url: str) -> Any:
    held = getattr(_threads, "held", None)
    if held is None or held[:2] != (url, os.getpid()):
        pool = _redis_client(url).connection_pool
        held = _threads.held = (url, os.getpid(), pool.connection_class(**pool.connection_kwargs))
    return held[2]


def _add_one_on(connection: Any, redis_key: str, ttl: int) -> int:
    connection.send_command("EVALSHA", _ADD_ONE_SHA, 1, redis_key, ttl)
    try:
        return int(connection.read_response())
    except NoScriptError:
        # A server that does not know the script yet (new, or restarted): EVAL
        # counts and keeps it for the EVALSHAs after.
        connection.send_command("EVAL", _ADD_ONE, 1, redis_key, ttl)
        return int(connection.read_response())


def _redis_add_one(url: str, key: str, window: int, window_seconds: int) -> int:
    redis_key, ttl = f"{_KEY_PREFIX}:{window}:{key}", window_seconds + 1
    connection = _connection(url)
    try:
        try:
            return _add_one_on(connection, redis_key, ttl)
        except (redis.ConnectionError, redis.TimeoutError):
            # A connection the server dropped meanwhile (idle, restarted): once more, connected anew.
            connection.disconnect()
            return _add_one_on(connection, redis_key, ttl)
    except BaseException:
        # Nothing half-read is left on it for the next request.
        connection.disconnect()
        raise


def budget_spend(key: str, limit: int, now: float | None = None) -> float | None:
    """Count one request of `key`: None while the window's count is within `limit`,
    else the seconds until the window ends (the request is over budget)."""
    window_seconds: int = settings.REQUEST_BUDGET_WINDOW_SECONDS
    now = time.time() if now is None else now
    window = int(now // window_seconds)
    url: str | None = settings.REDIS_URL
    if url:
        try:
            count = _redis_add_one(url, key, window, window_seconds)
        except redis.RedisError as error:
            # One line per outage, not a traceback per request.
            outage_log(logger, "redis-budget", "Request budget not counted: Redis unavailable", error=error)
            return None
    else:
        count = _local.add_one(key, window)
    if count <= limit:
        return None
    return (window + 1) * window_seconds - now
