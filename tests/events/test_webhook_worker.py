"""Deliveries by a real Celery worker process, against PostgreSQL and Redis, to a
real receiver on a loopback port (skipped without DATABASE_URL and REDIS_URL)."""

import signal
import time
from decimal import Decimal

import pytest
from standardwebhooks import Webhook

from bankapi.models import Account
from config.celery import app
from events.models import Delivery, WebhookEndpoint
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.conftest import requires_redis
from tests.events.test_webhooks import subscribe
from tests.support.receiver import start_receiver
from tests.support.worker import celery_workers


@pytest.fixture
def workers():
    env = {"WEBHOOK_RETRY_BASE_SECONDS": "0.2", "WEBHOOK_DELIVERY_LEASE_SECONDS": "2"}
    with celery_workers("events", env) as pool:
        yield pool


def wait_for(predicate, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def pay(account: Account):
    return payment_accept(
        account=account,
        instruction=PaymentInstruction(amount=Decimal("2.00"), currency=account.currency, reference="Worker"),
    )


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_receiver_failing_three_times_gets_the_event_once_from_a_real_worker(account, workers):
    receiver, server = start_receiver(script=[500, 500, 500])
    try:
        endpoint = subscribe(account, receiver.url)
        workers.start()

        request = pay(account)  # commits: its event's fan-out goes to the broker
        delivery = lambda: Delivery.objects.filter(event__resource_id=str(request.id)).first()  # noqa: E731
        wait_for(lambda: delivery() is not None and delivery().state == Delivery.State.DELIVERED)

        assert receiver.answered == [500, 500, 500, 200]
        body = Webhook(endpoint.secret).verify(receiver.received[-1].body, receiver.received[-1].headers)
        assert body["data"]["requestId"] == str(request.id)
        assert delivery().attempts == 4
    finally:
        server.shutdown()


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_delivery_loses_nothing(account, workers):
    receiver, server = start_receiver(hold_first=30.0)
    try:
        endpoint = subscribe(account, receiver.url)
        first = workers.start()
        request = pay(account)

        wait_for(lambda: len(receiver.received) == 1)  # the worker is inside the POST
        first.send_signal(signal.SIGKILL)
        first.wait()
        workers.start()
        time.sleep(2.5)  # the killed worker's lease runs out
        app.send_task("events.tasks.deliveries_sweep", queue=workers.queue)  # what beat does

        delivery = lambda: Delivery.objects.get(event__resource_id=str(request.id))  # noqa: E731
        wait_for(lambda: delivery().state == Delivery.State.DELIVERED)
        assert len(receiver.received) == 2
        assert {item.headers["webhook-id"] for item in receiver.received} == {
            receiver.received[0].headers["webhook-id"]
        }
        Webhook(endpoint.secret).verify(receiver.received[1].body, receiver.received[1].headers)
        assert WebhookEndpoint.objects.get(id=endpoint.id).enabled
    finally:
        server.shutdown()


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_reading_only_the_webhooks_queue_delivers_every_event(account, workers):
    receiver, server = start_receiver()
    try:
        endpoint = subscribe(account, receiver.url)
        workers.start(queues=[workers.webhooks_queue])  # as the Procfile's `webhooks`

        requests = [pay(account) for _ in range(5)]
        wait_for(lambda: len(receiver.received) == len(requests))

        bodies = [Webhook(endpoint.secret).verify(item.body, item.headers) for item in receiver.received]
        assert sorted(body["data"]["requestId"] for body in bodies) == sorted(str(r.id) for r in requests)
        # Recorded once answered (the receiver has each POST a moment before the worker's record).
        delivered = Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.DELIVERED)
        wait_for(lambda: delivered.count() == 5, 10.0)
        assert len(receiver.received) == 5
    finally:
        server.shutdown()
