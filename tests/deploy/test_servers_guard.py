"""The deployment test drops and makes databases and flushes a Redis database on
the servers DATABASE_URL and REDIS_URL name: it refuses any that is not a test
run's, on this machine."""

import pytest

from tests.deploy.conftest import servers_refusal

TEST_REDIS = "redis://127.0.0.1:6379/4"


@pytest.mark.parametrize(
    "database_url",
    [
        "postgres://postgres@127.0.0.1:5432/test",
        "postgresql://app:secret@localhost/ci",
        "postgres://u@[::1]:5432/x",
    ],
)
def test_an_empty_database_and_a_redis_on_this_machine_are_a_test_runs(database_url):
    assert servers_refusal(database_url, TEST_REDIS, 0) is None


@pytest.mark.parametrize(
    ("database_url", "redis_url", "tables", "named"),
    [
        ("postgres://bankapi:pw@db.internal:6432/bankapi", TEST_REDIS, 0, "DATABASE_URL"),
        ("postgres://bankapi:pw@10.0.0.5:5432/bankapi", TEST_REDIS, 0, "DATABASE_URL"),
        ("sqlite:///var/bankapi.sqlite3", TEST_REDIS, 0, "DATABASE_URL"),
        ("", TEST_REDIS, 0, "DATABASE_URL"),
        ("postgres://postgres@127.0.0.1:5432/test", "redis://cache.internal:6379/0", 0, "REDIS_URL"),
        ("postgres://postgres@127.0.0.1:5432/test", "", 0, "REDIS_URL"),
        ("postgres://postgres@127.0.0.1:5432/bankapi", TEST_REDIS, 87, "holds 87 table(s)"),
    ],
)
def test_a_remote_server_or_a_database_holding_data_is_refused(database_url, redis_url, tables, named):
    refusal = servers_refusal(database_url, redis_url, tables)

    assert refusal is not None and named in refusal
