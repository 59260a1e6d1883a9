import io
import os

import pytest
from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.management import call_command
from rest_framework.test import APIClient

from bankapi.models import SandboxManifest
from bankapi.ops.logs import log_context_of_request
from tests.support.network import LoopbackNetwork, install_loopback_network
from tests.support.openapi import ResponseChecker

# Fixtures shared by several domains' tests (program, customer2 and its account and token).
pytest_plugins = ["tests.support.fixtures"]

ON_POSTGRES = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
HAS_REDIS = bool(os.environ.get("REDIS_URL"))

requires_postgres = pytest.mark.skipif(
    not ON_POSTGRES, reason="needs PostgreSQL row locks: set DATABASE_URL to a PostgreSQL database"
)
# For a test that uses neither the suite's database nor Redis (say, it runs
# its own server on the embedded default, without DATABASE_URL or REDIS_URL):
# it does the same in both passes of `make test`, so it runs in the plain one
# only and leaves the PostgreSQL pass its time.
embedded_only = pytest.mark.skipif(
    ON_POSTGRES, reason="uses neither the suite's database nor Redis: the plain pass runs it"
)
requires_redis = pytest.mark.skipif(
    not (ON_POSTGRES and HAS_REDIS), reason="needs PostgreSQL and Redis: set DATABASE_URL and REDIS_URL"
)


def pytest_report_header(config):
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    return (
        f"bankapi: BANKAPI_ENV={os.environ.get('BANKAPI_ENV')} (a development run, chosen by "
        f"tests/settings.py), database {engine}, Redis {'on' if HAS_REDIS else 'off'}"
    )


def pytest_configure(config):
    settings.PASSWORD_HASHERS = ["tests.support.hashers.FastArgon2PasswordHasher"]
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    # The whole suite comes from one address (127.0.0.1) and reuses tokens far
    # faster than any client: the request budgets are tested with their own
    # settings (tests/authn/test_request_budget.py), not spent by every test.
    settings.REQUEST_BUDGET_PER_TOKEN = 10**9
    settings.REQUEST_BUDGET_PER_ADDRESS = 10**9


@pytest.fixture(autouse=True)
def _outside_any_request():
    """Each test starts outside any request. A request's log context is not undone
    when it returns (its last log lines are written after the middleware), so
    without this a test would log, and stamp the events it writes, with the id of
    a request an earlier test made in this thread."""
    with log_context_of_request(None):
        yield


@pytest.fixture(autouse=True)
def _celery_eager():
    """Tasks run in-process in tests unless a test starts a real worker itself."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def _bootstrap() -> dict:
    call_command("bootstrap_sandbox", "--json", stdout=io.StringIO())
    return SandboxManifest.objects.get(key="bootstrap_sandbox").data


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        _bootstrap()


@pytest.fixture
def sandbox(db) -> dict:
    """The bootstrap_sandbox output (its --json manifest).

    Made once per session; remade if a transactional test flushed the database.
    """
    manifest = SandboxManifest.objects.filter(key="bootstrap_sandbox").first()
    return manifest.data if manifest else _bootstrap()


@pytest.fixture(autouse=True)
def _responses_match_openapi(monkeypatch):
    """Every JSON response a test receives matches /v1/openapi.json (tests/support/openapi.py).

    Wraps Django's request handler, which serves APIClient, Django's Client and
    the live server alike.
    """
    checker = ResponseChecker()
    handle = BaseHandler.get_response

    def get_response(self, request):
        response = handle(self, request)
        checker.check(request, response)
        return response

    monkeypatch.setattr(BaseHandler, "get_response", get_response)
    yield
    assert not checker.found_elsewhere, "OpenAPI mismatch (live server): " + "\n".join(
        checker.found_elsewhere
    )


@pytest.fixture(autouse=True)
def loopback_network(monkeypatch) -> LoopbackNetwork:
    """No test sends anything off loopback: names come from a table and connections
    to other addresses are refused and recorded (tests/support/network.py)."""
    return install_loopback_network(monkeypatch)


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture(autouse=True)
def _forget_system_accounts():
    """Each process remembers system accounts it has seen committed; a test that
    empties the database (transactional tests) must not leave them behind."""
    from payments.ledger import system_accounts_forget

    yield
    system_accounts_forget()


@pytest.fixture(autouse=True)
def _ledger_balances(request):
    """After every test that touched the database, the ledger still balances.

    The database fixture is requested first so that this check runs before the
    test's transaction is rolled back (or its tables flushed).
    """
    names = set(request.fixturenames)
    database = next((name for name in ("transactional_db", "db") if name in names), None)
    if database is None:
        yield
        return
    request.getfixturevalue(database)
    yield
    from payments.ledger import ledger_check

    report = ledger_check()
    assert report.ok, f"Ledger invariant broken: {report}"
