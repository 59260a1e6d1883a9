"""Periodic runs never overlap themselves: every beat entry's task runs under a
lease with a heartbeat, a held lease makes a tick do nothing, an expired one
is taken over, and a run whose lease was taken over stops."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from bankapi.models import PeriodicLease
from bankapi.ops.periodic import LeaseLost, lease_release, lease_take, periodic_run
from config.celery import app
from payments.models import PaymentRequest
from tests.conftest import requires_postgres
from tests.payments.test_settlement import accept
from tests.support.race import run_at_once


def age(name: str, seconds: int) -> None:
    """Make the lease's last heartbeat `seconds` old (a run that stopped beating)."""
    PeriodicLease.objects.filter(name=name).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds))


def test_a_held_lease_is_refused_and_a_released_one_taken(db):
    first = lease_take("sweep")

    assert first is not None
    assert lease_take("sweep") is None
    lease_release(first, succeeded=True)
    assert lease_take("sweep") is not None
    assert PeriodicLease.objects.get(name="sweep").last_success_at is not None


def test_a_lease_whose_heartbeat_stopped_for_a_minute_is_taken_over_and_its_run_stops(db):
    dead = lease_take("sweep")
    age("sweep", 59)
    assert lease_take("sweep") is None

    age("sweep", 61)
    taker = lease_take("sweep")

    assert taker is not None
    with pytest.raises(LeaseLost):
        dead.beat()
    taker.beat()
    lease_release(dead, succeeded=True)  # too late: changes nothing
    assert PeriodicLease.objects.get(name="sweep").holder == taker.holder


def test_a_run_that_fails_gives_the_lease_back_without_a_success(db):
    def failing(lease):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        periodic_run("sweep", failing)

    row = PeriodicLease.objects.get(name="sweep")
    assert (row.holder, row.last_success_at) == (None, None)


@pytest.mark.parametrize("entry", sorted(settings.CELERY_BEAT_SCHEDULE))
def test_every_beat_entry_does_nothing_while_another_run_holds_its_lease(db, entry):
    app.loader.import_default_modules()  # every app's tasks, as a worker loads them
    task = app.tasks[settings.CELERY_BEAT_SCHEDULE[entry]["task"]]
    other = lease_take(entry)

    assert task.apply().get() is None
    assert PeriodicLease.objects.get(name=entry).last_success_at is None

    lease_release(other, succeeded=False)
    task.apply().get()
    row = PeriodicLease.objects.get(name=entry)
    assert row.holder is None and row.last_success_at is not None


def test_a_settlement_tick_beside_a_live_run_settles_nothing(account, production_auth):
    _, live_account = production_auth
    waiting = accept(live_account)
    lease_take("settle-pending-payments")

    assert app.tasks["payments.tasks.settle_pending_payments"].apply().get() is None

    assert PaymentRequest.objects.get(id=waiting.id).status == "PENDING"


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_of_runs_racing_for_one_lease_exactly_one_takes_it(transactional_db):
    for _ in range(5):
        PeriodicLease.objects.all().delete()
        leases = run_at_once(6, lambda _: lease_take("sweep"))
        assert sum(lease is not None for lease in leases) == 1
