"""The database connection's settings for prepared statements.

Prepared statements, where the connection keeps them: on a direct connection to
PostgreSQL, or through a pooler that carries them (PgBouncer 1.21 or later with
`max_prepared_statements`); never through PgBouncer 1.18 in transaction pooling,
where a statement prepared on one server connection is missing on the next.
On: each process keeps its connections in Django's psycopg pool (its own, not
persistent per thread), values are bound on the server, and a statement sent a
second time on a connection is prepared there, so PostgreSQL parses and plans
a payment's statements once per connection instead of on every payment.
"""

from typing import Any

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int


def prepared_statements_configure(database: Any) -> bool:
    """`DATABASE_PREPARED_STATEMENTS` (off by default) applied to `database` (a
    DATABASES entry): whether it is on."""
    if not env_bool("DATABASE_PREPARED_STATEMENTS", False):
        return False
    if database["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_PREPARED_STATEMENTS is for PostgreSQL only")
    # The pool keeps the connections: Django takes one per request and gives it back.
    database["CONN_MAX_AGE"] = 0
    # The pool replaces a connection it finds broken when it is given back; a check
    # before lending one would cost every request a round trip.
    database["CONN_HEALTH_CHECKS"] = False
    database.setdefault("OPTIONS", {}).update(
        {
            "server_side_binding": True,
            "prepare_threshold": 2,
            "pool": {
                "min_size": env_int("DATABASE_POOL_MIN_SIZE", 2),
                # Every thread of a web process (gunicorn's WEB_THREADS) may hold one.
                "max_size": env_int("DATABASE_POOL_MAX_SIZE", max(env_int("WEB_THREADS", 8), 2) + 2),
                # A request waits this long for a connection, then answers 503.
                "timeout": env_float("DATABASE_POOL_TIMEOUT", 5.0),
            },
        }
    )
    return True
