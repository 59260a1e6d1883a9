"""gunicorn settings of a web node: `gunicorn --config deploy/gunicorn.conf.py bankapi.wsgi:application`.

The address and the number of worker processes come from the environment
(GUNICORN_BIND, WEB_CONCURRENCY); everything else is fixed here.
"""

import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Synchronous workers: each request holds one database connection (through PgBouncer)
# for its duration. About two per core; PgBouncer's pool is sized from this.
workers = int(os.environ.get("WEB_CONCURRENCY", "4"))
# Load the application once in the master: a deployment missing a setting stops
# here with one message instead of every worker failing in turn, and workers fork
# in milliseconds when one is replaced.
preload_app = True
# A request running longer than this is killed (its worker replaced); the
# idempotency claim it left is taken over by a retry once stale.
timeout = 30
graceful_timeout = 20
keepalive = 5
# Replace each worker after about this many requests (memory growth stays bounded).
max_requests = 2000
max_requests_jitter = 200
# The TLS-terminating proxy in front sets X-Forwarded-Proto; trust it from here only.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# Access lines on stdout, next to the service's own log lines.
accesslog = "-"
# No runtime control socket: its default path is shared by every gunicorn of the user.
control_socket_disable = True
