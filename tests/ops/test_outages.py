"""The database or Redis away: what a client, a load balancer and the log see.

The database is made unreachable the way psycopg reports it (a refused or
dropped connection, wrapped by Django as `OperationalError`); tests/deploy's
fault test does it for real (PostgreSQL restarted and killed, PgBouncer restarted).
"""

import contextlib
import logging
import time
from datetime import timedelta

import psycopg
import pytest
from django.db import InterfaceError, OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from bankapi.ops.outages import database_unavailable, failure_log, outages_forget
from batches.models import Batch
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.conftest import requires_redis
from tests.payments.conftest import payments_url
from tests.proof.processes import free_port
from tests.support.factories import custodian_with_clients


def _refused() -> OperationalError:
    cause = psycopg.OperationalError('connection to server at "127.0.0.1", port 6432 failed')
    error = OperationalError(str(cause))
    error.__cause__ = cause
    return error


@contextlib.contextmanager
def database_away(monkeypatch):
    """Every new cursor fails as when PostgreSQL (or PgBouncer) cannot be reached."""

    def refuse(self, name=None):
        raise _refused()

    with monkeypatch.context() as patch:
        patch.setattr(BaseDatabaseWrapper, "_cursor", refuse)
        yield


@pytest.fixture(autouse=True)
def _fresh_outage_log():
    outages_forget()
    yield
    outages_forget()


def assert_unavailable(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "1"
    body = response.json()
    assert body["success"] is False and body["code"] == "SERVICE_UNAVAILABLE"
    assert body["retryable"] is True and body["requestId"] == response["X-Request-Id"]


def test_a_payment_while_the_database_is_away_is_a_503_with_retry_after(
    api, account, beneficiary, customer_auth, monkeypatch, caplog
):
    body = {"amount": "1.00", "reference": "Outage", "beneficiaryId": str(beneficiary.id)}
    caplog.set_level(logging.INFO)
    with database_away(monkeypatch):
        answers = [
            api.post(payments_url(account.customer_id, account.id), body, format="json", **customer_auth)
            for _ in range(5)
        ]
    for answer in answers:
        assert_unavailable(answer)
    # No traceback per request: one concise warning for the outage, not one line each.
    assert not [record for record in caplog.records if record.exc_info]
    warnings = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warnings) == 1, [record.getMessage() for record in warnings]
    assert "Database unavailable" in warnings[0].getMessage()
    # Back: the same request is served.
    paid = api.post(payments_url(account.customer_id, account.id), body, format="json", **customer_auth)
    assert paid.status_code == 200, paid.content


def test_the_bearer_authentication_meeting_the_database_away_is_a_503(
    api, account, customer_auth, monkeypatch
):
    with database_away(monkeypatch):
        assert_unavailable(api.get("/v1/capabilities", **customer_auth))
        # Signing in reads the database before any view logic too.
        assert_unavailable(
            api.post("/v1/auth/login", {"email": "a@example.com", "password": "x" * 12}, format="json")
        )


def test_a_page_outside_the_api_is_a_503_too(db, monkeypatch, caplog):
    """The admin's sign-in reads the database in Django's own view, outside the
    API's error handler: Django's 500 handler answers it."""
    client = APIClient(raise_request_exception=False)
    with database_away(monkeypatch):
        answer = client.post("/admin/login/", {"username": "staff@example.com", "password": "x"})
    assert answer.status_code == 503
    assert answer["Retry-After"] == "1"
    assert answer.json()["code"] == "SERVICE_UNAVAILABLE"
    assert not [record for record in caplog.records if record.exc_info]


def test_what_is_an_outage_and_what_is_a_bug():
    assert database_unavailable(_refused())
    assert database_unavailable(InterfaceError("connection already closed"))
    for state, unavailable in (("08006", True), ("57P01", True), ("57P03", True), ("40P01", False)):
        cause = psycopg.errors.lookup(state)("server said so")
        error = OperationalError(str(cause))
        error.__cause__ = cause
        assert database_unavailable(error) is unavailable, state
    # A deadlock, a SQLite lock, any other error: not an outage (still a 500).
    assert not database_unavailable(OperationalError("database is locked"))
    assert not database_unavailable(ValueError("bug"))


def test_readiness_follows_the_database_not_redis(api, db, monkeypatch):
    nothing_listens = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(REDIS_URL=nothing_listens):
        ready = api.get("/readyz")
        assert ready.status_code == 200, ready.content
        assert ready.json() == {"status": "ok", "checks": {"database": "ok", "redis": "unavailable"}}
        with database_away(monkeypatch):
            not_ready = api.get("/readyz")
        assert not_ready.status_code == 503
        assert not_ready.json()["checks"] == {"database": "unavailable", "redis": "unavailable"}
    with override_settings(REDIS_URL=None):
        assert api.get("/readyz").json()["checks"] == {"database": "ok", "redis": "not configured"}


def scrape(api) -> dict[str, float]:
    response = api.get("/metrics")
    assert response.status_code == 200, response.content
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
        if not sample.labels
    }


def test_metrics_answer_at_once_while_the_database_is_away(api, db, monkeypatch, caplog):
    asked: list[int] = []
    real_cursor = BaseDatabaseWrapper._cursor

    def refuse(self, name=None):
        asked.append(1)
        raise _refused()

    assert "bankapi_outbox_oldest_pending_seconds" in scrape(api)
    with monkeypatch.context() as patch:
        patch.setattr(BaseDatabaseWrapper, "_cursor", refuse)
        away = [scrape(api) for _ in range(3)]
    # The counters answer; the database's gauges are left out, and after the first
    # failure not even asked for (no scrape waits on a database that is away).
    for samples in away:
        assert "bankapi_task_publish_failures_total" in samples
        assert "bankapi_outbox_oldest_pending_seconds" not in samples
    assert len(asked) == 1
    assert not [record for record in caplog.records if record.exc_info]
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    assert BaseDatabaseWrapper._cursor is real_cursor


def test_redis_availability_is_a_metric(api, db):
    nothing_listens = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(REDIS_URL=nothing_listens):
        assert scrape(api)["bankapi_redis_up"] == 0


@pytest.mark.redis
@requires_redis
def test_redis_up_when_it_answers(api, db):
    assert scrape(api)["bankapi_redis_up"] == 1


def test_a_stalled_batch_is_a_metric(api, program):
    custodian = custodian_with_clients(program, clients=1)
    # Submitted; its processing task never ran (the after-commit work is not run here).
    batch = batch_submitted(custodian.user, [payment(custodian.accounts[0], "1.00")])
    assert scrape(api)["bankapi_batch_oldest_stall_seconds"] < 60
    # Left in PROCESSING by a dead worker, untouched for ten minutes.
    Batch.objects.filter(id=batch.id).update(
        status=Batch.Status.PROCESSING, progressed_at=timezone.now() - timedelta(minutes=10)
    )
    assert 600 <= scrape(api)["bankapi_batch_oldest_stall_seconds"] < 660
    Batch.objects.filter(id=batch.id).update(status=Batch.Status.COMPLETED)
    assert scrape(api)["bankapi_batch_oldest_stall_seconds"] == 0


def test_the_outbox_relay_logs_an_outage_once_not_per_pass(monkeypatch, caplog):
    from events import relay

    passes: list[int] = []

    def database_away(limit=None, send=None):
        passes.append(1)
        raise _refused()

    monkeypatch.setattr(relay, "relay_once", database_away)
    caplog.set_level(logging.INFO)
    worker = relay.OutboxRelay(poll_seconds=0.01, batch=10)
    worker.start()
    deadline = time.monotonic() + 10
    while len(passes) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop()
    assert len(passes) >= 20
    lines = [record for record in caplog.records if record.name == "events.relay"]
    assert len(lines) == 1 and not lines[0].exc_info, [record.getMessage() for record in lines]
    assert "outbox relay pass failed" in lines[0].getMessage()


def test_a_bug_in_a_retried_loop_keeps_its_traceback(caplog):
    logger = logging.getLogger("bankapi.test")
    for _ in range(5):
        try:
            raise ValueError("a bug")
        except ValueError:
            failure_log(logger, "bug", "pass failed")
    (record,) = caplog.records
    assert record.exc_info and record.exc_info[0] is ValueError
