"""Celery tasks of event delivery: thin wrappers, safe to run twice or at once,
and `drains_enqueue`, how any part of delivery queues an endpoint's drain.

All of them go to the webhooks queue (`config.celery.task_route`), read by
workers of their own: a slow or failing receiver never holds up settlement or
any other task of the default queue.
"""

import logging
from collections.abc import Iterable
from typing import Any

from celery import shared_task

from bankapi.ops.logs import log_context_of_request
from bankapi.tasks import task_in_process, task_publish
from events import delivery, drain

logger = logging.getLogger(__name__)


def drains_enqueue(endpoint_ids: Iterable[Any]) -> None:
    """A drain task per endpoint, on the webhooks queue; one the broker does not
    take leaves its deliveries pending for the beat sweep (`deliveries_sweep`)."""
    for endpoint_id in sorted(str(endpoint_id) for endpoint_id in endpoint_ids):
        task_publish(deliveries_drain, endpoint_id)


@shared_task
def events_fan_out(event_ids: list[int]) -> int:
    endpoints = delivery.events_fan_out(event_ids)
    drains_enqueue(endpoints)
    return len(endpoints)


@shared_task(bind=True)
def deliveries_drain(self, endpoint_id: str) -> int:
    """Drain one endpoint. With a broker, what is left for later is queued here:
    a fresh drain when it stopped at its time limit, and one drain at the
    endpoint's next retry (in-process a retry waits for the sweep instead)."""
    result = drain.endpoint_drain(endpoint_id)
    if result.drained:
        logger.info("webhook drain: %d delivered to endpoint %s", result.delivered, endpoint_id)
    if task_in_process(self) or not result.drained:
        return result.delivered
    if result.more:
        task_publish(deliveries_drain, endpoint_id)
        return result.delivered
    retry_at, request_id = drain.retry_schedule(endpoint_id)
    if retry_at is not None:
        # The retry task carries the id of the request whose event it is for.
        with log_context_of_request(request_id):
            task_publish(deliveries_drain, endpoint_id, eta=retry_at)
    return result.delivered


@shared_task
def deliveries_sweep() -> int:
    endpoints = delivery.deliveries_sweep()
    drains_enqueue(endpoints)
    return len(endpoints)
