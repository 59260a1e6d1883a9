"""Database connection settings: persistent on PostgreSQL, checked before reuse."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINT_DATABASE = (
    "import django, json; django.setup(); from django.conf import settings; "
    "d = settings.DATABASES['default']; "
    "print(json.dumps({'max_age': d['CONN_MAX_AGE'], 'health': d['CONN_HEALTH_CHECKS']}))"
)


def database_settings(env: dict[str, str]) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DATABASE_CONN_MAX_AGE"}}
    result = subprocess.run(
        [sys.executable, "-c", PRINT_DATABASE],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "bankapi.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_postgresql_connections_persist_with_health_checks():
    settings = database_settings({"DATABASE_URL": "postgres://bank@127.0.0.1:5432/bank"})

    assert settings == {"max_age": 600, "health": True}


def test_connection_age_can_be_set_and_sqlite_closes_by_default():
    assert database_settings({"DATABASE_URL": "postgres://bank@db/bank", "DATABASE_CONN_MAX_AGE": "0"}) == {
        "max_age": 0,
        "health": True,
    }
    assert database_settings({})["max_age"] == 0
