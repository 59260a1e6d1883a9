"""gunicorn settings of a web node: `gunicorn --config deploy/gunicorn.conf.py config.wsgi:application`.

The address and the number of worker processes come from the environment
(GUNICORN_BIND, WEB_CONCURRENCY); everything else is fixed here.
"""

import os
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Threaded workers: a few processes, each serving several requests at once. Password
# checks (Argon2, expensive on purpose) are bounded per process, so with threads a
# flood of failed sign-ins leaves the other threads to everyone else's payments; with
# one synchronous request per process, every process could be hashing at once. Each
# thread holds one database connection (through PgBouncer) while it serves a request:
# PgBouncer's pool is sized from workers x threads.
# Ten threads: the sign-ins waiting for a check slot are capped at the threads less
# two (PASSWORD_CHECK_WAITERS), so eight correct sign-ins landing in one process at
# once (one checking, seven waiting) all get their check; with eight threads the
# eighth was refused.
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "10"))
# Load the application once in the master: a deployment missing a setting stops
# here with one message instead of every worker failing in turn, and workers fork
# in milliseconds when one is replaced.
preload_app = True
# A request running longer than this is killed (its worker replaced); the
# idempotency claim it left is taken over by a retry once stale.
timeout = 30
graceful_timeout = 20
keepalive = 5
# Replace each worker after about this many requests, so that a slow leak stays
# bounded. Not sooner: a worker's memory levels off after its first few thousand
# requests (about 115 MB, unchanged from 3,500 to 10,000 requests per worker),
# and each replacement costs a new database connection and cold caches (its first
# statements plan several times slower). At 2,000, a loaded node replaced every
# worker every half minute and served 5-10 % fewer payments (bench/payments).
max_requests = 50000
max_requests_jitter = 5000
# The TLS-terminating proxy in front sets X-Forwarded-Proto; trust it from here only.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# Access lines on stdout, next to the service's own log lines, in the combined log
# format, written without gunicorn's table of every header (bankapi/ops/access_log.py).
accesslog = "-"
logger_class = "bankapi.ops.access_log.CombinedAccessLog"
# No runtime control socket: its default path is shared by every gunicorn of the user.
control_socket_disable = True


# Prometheus multiprocess mode (bankapi.ops.metrics): the master empties the metrics
# directory at start, so counts of a previous run are not read as this one's, and
# drops a dead worker's gauges. Imported lazily: the master loads no Django here.
def on_starting(server: Any) -> None:
    from bankapi.ops.metrics_files import multiprocess_directory_reset

    multiprocess_directory_reset()


def child_exit(server: Any, worker: Any) -> None:
    from bankapi.ops.metrics_files import mark_process_dead

    mark_process_dead(worker.pid)
