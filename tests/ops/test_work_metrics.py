"""The work behind the door, as /metrics shows it: settlement's lag, the
queues' lengths and each periodic task's last success."""

import uuid
from datetime import timedelta

import redis
from django.conf import settings
from django.utils import timezone

from bankapi.ops.metrics import celery_queues
from payments.models import PaymentRequest
from payments.tasks import settle_pending_payments
from tests.conftest import requires_redis
from tests.ops.test_metrics import scrape, value
from tests.payments.test_settlement import accept


def test_settlement_lag_is_the_age_of_the_oldest_production_payment_waiting(api, account, production_auth):
    _, live_account = production_auth
    assert value(scrape(api), "bankapi_settlement_lag_seconds") == 0
    waiting = accept(live_account)
    accept(account)  # a sandbox payment never settles on its own: not lag
    PaymentRequest.objects.filter(id=waiting.id).update(created_at=timezone.now() - timedelta(seconds=300))

    lag = value(scrape(api), "bankapi_settlement_lag_seconds")

    assert 300 <= lag < 360
    settle_pending_payments.delay().get()
    assert value(scrape(api), "bankapi_settlement_lag_seconds") == 0


def test_every_beat_entry_has_its_last_success_zero_until_it_runs(api, account, production_auth):
    before = scrape(api)
    for entry in settings.CELERY_BEAT_SCHEDULE:
        assert value(before, "bankapi_periodic_task_last_success_timestamp_seconds", task=entry) == 0
        assert (
            "bankapi_periodic_task_last_success_timestamp_seconds",
            (("task", entry),),
        ) in before

    settle_pending_payments.delay().get()

    after = scrape(api)
    stamped = value(
        after, "bankapi_periodic_task_last_success_timestamp_seconds", task="settle-pending-payments"
    )
    assert abs(stamped - timezone.now().timestamp()) < 60
    assert value(after, "bankapi_periodic_task_last_success_timestamp_seconds", task="approvals-expire") == 0


def test_every_configured_queue_has_a_length(api, db):
    samples = scrape(api)

    for queue in celery_queues():
        assert ("bankapi_celery_queue_length", (("queue", queue),)) in samples
    if not settings.REDIS_URL:
        assert {value(samples, "bankapi_celery_queue_length", queue=q) for q in celery_queues()} == {0}


@requires_redis
def test_a_queue_length_counts_the_messages_waiting_in_redis(api, db, settings):
    queue = f"test-queue-{uuid.uuid4().hex}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        client.rpush(queue, *[b"message"] * 3)
        client.rpush(f"{queue}\x06\x166", b"message")  # the same queue's priority 6

        assert value(scrape(api), "bankapi_celery_queue_length", queue=queue) == 4
    finally:
        client.delete(queue, f"{queue}\x06\x166")
