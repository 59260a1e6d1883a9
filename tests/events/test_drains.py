"""Drains per endpoint: one task per endpoint however many resources its events
concern, one drain of an endpoint at a time, each resource's order kept when an
earlier event fails, connections kept for the whole drain, and the tasks on a
queue of their own."""

import json
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from config.celery import app
from events import drain
from events.models import Delivery, WebhookEndpoint
from events.relay import relay_once
from events.tasks import deliveries_drain
from payments.services.settlement import payment_settle
from tests.conftest import requires_postgres
from tests.events.test_webhooks import ACCEPTED, SETTLED, pay, subscribe
from tests.support.receiver import start_receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    servers = []

    def start(script=None):
        hook, server = start_receiver(script)
        servers.append(server)
        return hook

    yield start
    for server in servers:
        server.shutdown()


@pytest.fixture
def published(monkeypatch):
    """As with a broker: nothing runs in-process, and each drain task published is
    recorded (with its eta) instead of sent."""
    sent: list[tuple[tuple, object]] = []
    monkeypatch.setattr(
        deliveries_drain, "apply_async", lambda args, eta=None: sent.append((tuple(args), eta))
    )
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield sent
    app.conf.task_always_eager = previous


def received(endpoint: WebhookEndpoint, hook) -> list[tuple[str, str]]:
    """(type, payment request) of each POST the receiver got, in order."""
    return [
        (json.loads(item.body)["type"], json.loads(item.body)["data"]["requestId"]) for item in hook.received
    ]


def test_many_resources_to_one_endpoint_make_one_drain_task(account, receiver, published):
    hook = receiver()
    endpoint = subscribe(account, hook.url)
    requests = [pay(account, "1.00") for _ in range(40)]  # 40 resources, one event each

    moved = relay_once()

    assert moved >= len(requests)  # and whatever else the outbox held
    assert published == [((str(endpoint.id),), None)]
    assert Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.PENDING).count() == 40
    # While a drain holds the endpoint, new deliveries queue no task: it takes them.
    WebhookEndpoint.objects.filter(id=endpoint.id).update(
        drain_leased_until=timezone.now() + timedelta(seconds=60)
    )
    pay(account, "1.00")
    assert relay_once() >= 1
    assert published == [((str(endpoint.id),), None)]
    assert Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.PENDING).count() == 41


def test_the_drain_task_sends_every_resource_over_a_few_kept_connections(account, receiver, published):
    hook = receiver()
    endpoint = subscribe(account, hook.url)
    requests = [pay(account, "1.00") for _ in range(30)]
    relay_once()

    assert deliveries_drain(str(endpoint.id)) == 30

    assert sorted(request_id for _, request_id in received(endpoint, hook)) == sorted(
        str(request.id) for request in requests
    )
    # One connection per lane at most, each kept for the whole drain.
    assert 1 <= hook.connections <= drain.DRAIN_LANES
    assert Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.DELIVERED).count() == 30
    # Only the relay's task: nothing left, so no retry and no second drain queued.
    assert published == [((str(endpoint.id),), None)]


def test_a_failed_event_holds_back_its_resource_and_the_others_go_on(
    account, receiver, published, settings, monkeypatch
):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 60.0
    # One lane, so the receiver's first POST is first's (tests/events/test_drain_lanes.py
    # has the same with lanes side by side).
    monkeypatch.setattr(drain, "DRAIN_LANES", 1)
    hook = receiver(script=[503])  # the first POST fails
    endpoint = subscribe(account, hook.url)
    first, second = pay(account, "1.00"), pay(account, "1.00")
    payment_settle(first)
    payment_settle(second)
    relay_once()

    deliveries_drain(str(endpoint.id))

    # first's accepted event failed: its settled event waits; second's go out in order.
    assert received(endpoint, hook) == [
        (ACCEPTED, str(first.id)),
        (ACCEPTED, str(second.id)),
        (SETTLED, str(second.id)),
    ]
    # After the relay's drain task, one retry task at the failed delivery's backoff.
    failed = Delivery.objects.get(event__resource_id=str(first.id), event__type=ACCEPTED)
    assert published == [((str(endpoint.id),), None), ((str(endpoint.id),), failed.next_attempt_at)]

    Delivery.objects.filter(state=Delivery.State.PENDING).update(next_attempt_at=timezone.now())
    deliveries_drain(str(endpoint.id))

    assert received(endpoint, hook)[3:] == [(ACCEPTED, str(first.id)), (SETTLED, str(first.id))]
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.DELIVERED}


def test_later_failures_queue_no_second_retry_task_before_the_first(
    account, receiver, published, monkeypatch
):
    monkeypatch.setattr(drain, "retry_delay", lambda attempts: timedelta(seconds=60))
    hook = receiver(script=[503, 503])
    endpoint = subscribe(account, hook.url, types=[ACCEPTED])
    pay(account, "1.00")
    relay_once()
    deliveries_drain(str(endpoint.id))
    pay(account, "1.00")
    relay_once()
    deliveries_drain(str(endpoint.id))

    assert hook.answered == [503, 503]
    drains = [args for args, eta in published]
    retries = [eta for args, eta in published if eta is not None]
    # Two drain tasks from the relay passes, and one retry: the second failure's
    # retry comes after the first's, whose drain will find it.
    assert drains.count((str(endpoint.id),)) == 3 and len(retries) == 1
    assert retries[0] == Delivery.objects.order_by("next_attempt_at").first().next_attempt_at


def test_a_drain_past_its_time_hands_the_endpoint_to_a_fresh_task(account, receiver, published, monkeypatch):
    hook = receiver()
    endpoint = subscribe(account, hook.url, types=[ACCEPTED])
    for _ in range(5):
        pay(account, "1.00")
    relay_once()
    monkeypatch.setattr(drain, "DRAIN_SET_SIZE", 2)

    result = drain.endpoint_drain(endpoint.id, seconds=0)

    assert (result.delivered, result.drained, result.more) == (2, True, True)
    assert WebhookEndpoint.objects.get(id=endpoint.id).drain_leased_until is None
    assert drain.endpoint_drain(endpoint.id).delivered == 3
    assert len(hook.received) == 5


def test_drain_tasks_go_to_the_webhooks_queue_and_settlement_to_the_default_one():
    router = app.amqp.router

    def queue_of(name: str) -> str:
        return router.route({}, name, (), {})["queue"].name

    assert queue_of(deliveries_drain.name) == settings.CELERY_WEBHOOKS_QUEUE == "webhooks"
    assert queue_of("events.tasks.deliveries_sweep") == "webhooks"
    assert queue_of("events.tasks.events_fan_out") == "webhooks"
    assert queue_of("payments.tasks.settle_pending_payments") == settings.CELERY_TASK_DEFAULT_QUEUE


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_drains_of_one_endpoint_at_once_deliver_each_event_once(account, receiver, published):
    hook = receiver()
    hook.hold_first = 3.0  # the first drain sits in its first POST
    endpoint = subscribe(account, hook.url)
    requests = [pay(account, "1.00") for _ in range(10)]
    relay_once()
    results: dict[str, drain.DrainResult] = {}

    def first() -> None:
        from django.db import connection

        try:
            results["first"] = drain.endpoint_drain(endpoint.id)
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    deadline = timezone.now() + timedelta(seconds=30)
    while not hook.received and timezone.now() < deadline:
        threading.Event().wait(0.05)
    results["second"] = drain.endpoint_drain(endpoint.id)  # while the first holds the endpoint
    thread.join(60)

    assert results["second"] == drain.DrainResult(0, drained=False)
    assert results["first"].delivered == len(requests)
    sent = Counter(item.headers["webhook-id"] for item in hook.received)
    assert len(sent) == len(requests) and set(sent.values()) == {1}
    assert Delivery.objects.filter(state=Delivery.State.DELIVERED).count() == len(requests)
