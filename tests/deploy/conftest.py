"""Figures the deployment test measures, printed at the end of the run (with or
without -s), so CI logs keep them."""

import os
from urllib.parse import urlsplit

import psycopg
import pytest

_SECTIONS: list[tuple[str, str]] = []


def report_figures(title: str, text: str) -> None:
    _SECTIONS.append((title, text))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    for title, text in _SECTIONS:
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text)


LOOPBACK_HOSTS = {"localhost", "::1", "[::1]"}


def _loopback(host: str | None) -> bool:
    return bool(host) and (host in LOOPBACK_HOSTS or host.startswith("127."))


def servers_refusal(database_url: str, redis_url: str, database_tables: int) -> str | None:
    """Why the deployment test must not run against these servers, or None.

    It drops and makes databases on the PostgreSQL server `DATABASE_URL` names and
    flushes a Redis database on the server `REDIS_URL` names. So both must be on
    this machine, and `DATABASE_URL` must name a test run's database: one that
    holds no table (the test suite works in `test_<name>` beside it and leaves
    it empty), which a deployment's database never is.
    """
    database, redis = urlsplit(database_url), urlsplit(redis_url)
    here = "on this machine (127.0.0.1, ::1)"
    if database.scheme not in {"postgres", "postgresql"} or not _loopback(database.hostname):
        return f"DATABASE_URL must name a PostgreSQL server {here}, not {database.hostname!r}"
    if redis.scheme != "redis" or not _loopback(redis.hostname):
        return f"REDIS_URL must name a Redis server {here}, not {redis.hostname!r}"
    if database_tables:
        name = database.path.lstrip("/")
        return (
            f"DATABASE_URL names database {name!r}, which holds {database_tables} table(s): "
            "a deployment's or a developer's data, not a test run's (give an empty database)"
        )
    return None


def refuse_unless_test_servers() -> None:
    """Stop the deployment test before it touches any server that is not a test's."""
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    refusal = servers_refusal(database_url, redis_url, 0)
    if refusal is None:
        with psycopg.connect(database_url, connect_timeout=5) as connection:
            (tables,) = connection.execute(
                "SELECT count(*) FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
            ).fetchone()
        refusal = servers_refusal(database_url, redis_url, tables)
    if refusal is not None:
        pytest.fail(f"tests/deploy refuses to run: {refusal}", pytrace=False)
