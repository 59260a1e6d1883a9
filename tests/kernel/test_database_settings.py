"""Database connection settings: persistent on PostgreSQL, checked before reuse;
or, with prepared statements, each process's pool with server-side binding."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINT_DATABASE = (
    "import django, json; django.setup(); from django.conf import settings; "
    "d = settings.DATABASES['default']; "
    "print(json.dumps({'max_age': d['CONN_MAX_AGE'], 'health': d['CONN_HEALTH_CHECKS'], "
    "'options': {k: v for k, v in d['OPTIONS'].items() if k != 'connect_timeout'}}))"
)


ASKED = {"DATABASE_URL", "DATABASE_CONN_MAX_AGE", "DATABASE_PREPARED_STATEMENTS", "WEB_THREADS"}


def run_settings(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ASKED and not k.startswith("DATABASE_POOL_")}
    return subprocess.run(
        [sys.executable, "-c", PRINT_DATABASE],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def database_settings(env: dict[str, str]) -> dict:
    result = run_settings(env)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    if not found["options"]:
        del found["options"]
    return found


def test_postgresql_connections_persist_with_health_checks():
    settings = database_settings({"DATABASE_URL": "postgres://bank@127.0.0.1:5432/bank"})

    assert settings == {"max_age": 600, "health": True}


def test_connection_age_can_be_set_and_sqlite_closes_by_default():
    assert database_settings({"DATABASE_URL": "postgres://bank@db/bank", "DATABASE_CONN_MAX_AGE": "0"}) == {
        "max_age": 0,
        "health": True,
    }
    assert database_settings({})["max_age"] == 0


def test_prepared_statements_take_the_pool_and_server_side_binding():
    """Where the connection keeps them (DATABASE_PREPARED_STATEMENTS): each process's
    connections in Django's psycopg pool, sized for gunicorn's threads; values bound
    on the server; a statement prepared the second time a connection sends it. No
    per-request check before a connection is lent: it would cost each request a
    round trip (the pool drops a broken connection when it is given back)."""
    settings = database_settings(
        {
            "DATABASE_URL": "postgres://bank@db/bank",
            "DATABASE_PREPARED_STATEMENTS": "true",
            "WEB_THREADS": "6",
        }
    )

    assert settings == {
        "max_age": 0,
        "health": False,
        "options": {
            "server_side_binding": True,
            "prepare_threshold": 2,
            "pool": {"min_size": 2, "max_size": 8, "timeout": 5.0},
        },
    }


def test_prepared_statements_are_off_unless_asked_and_for_postgresql_only():
    assert "options" not in database_settings({"DATABASE_URL": "postgres://bank@db/bank"})
    result = run_settings({"DATABASE_PREPARED_STATEMENTS": "true"})
    assert result.returncode != 0
    assert "DATABASE_PREPARED_STATEMENTS is for PostgreSQL only" in result.stderr


def test_a_database_that_does_not_answer_is_given_up_after_the_connect_timeout():
    """A server that takes the TCP connection and never answers (a hung host, a
    stopped pooler's socket): the request gives up after DATABASE_CONNECT_TIMEOUT
    seconds (and answers 503), instead of waiting on the system's TCP timeout."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the kernel; nothing ever answers them
        port = silent.getsockname()[1]
        code = (
            "import django, time; django.setup(); from django.db import connection, OperationalError\n"
            "started = time.monotonic()\n"
            "try:\n    connection.ensure_connection()\nexcept OperationalError:\n"
            "    print(round(time.monotonic() - started, 1))\n"
        )
        clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DATABASE_CONN_MAX_AGE"}}
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={
                **clean,
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "DATABASE_URL": f"postgres://bank@127.0.0.1:{port}/bank",
                "DATABASE_CONNECT_TIMEOUT": "2",
            },
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 0, result.stderr
    assert 1.5 <= float(result.stdout.strip().splitlines()[-1]) < 10
