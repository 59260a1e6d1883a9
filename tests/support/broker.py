"""A Celery broker that cannot be reached (Redis down), for tests of what a
request answers when the task it queues after commit cannot be published."""

import pytest

from bankapi.ops.outages import outages_forget
from config.celery import app
from tests.proof.processes import free_port


@pytest.fixture
def broker_away(monkeypatch):
    """Tasks go to a broker (not in-process) that nothing answers at; a test sets
    `app.conf.task_always_eager = True` again to stand for the broker being back."""
    outages_forget()
    broker_url = app.conf.broker_url
    app.conf.task_always_eager = False
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield
    app.conf.broker_url = broker_url
    app.conf.task_always_eager = True
    outages_forget()
