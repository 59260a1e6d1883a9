"""Celery tasks of event delivery: thin wrappers, safe to run twice or at once."""

from celery import shared_task

from bankapi.logs import log_context_of_request
from bankapi.tasks import task_in_process, task_publish
from events import delivery


def _drain_later(queues) -> None:
    delivery.drains_enqueue(queues)


@shared_task
def events_fan_out(event_ids: list[int]) -> int:
    queues = delivery.events_fan_out(event_ids)
    _drain_later(queues)
    return len(queues)


@shared_task(bind=True)
def deliveries_drain(self, endpoint_id: str, resource_key: str) -> int:
    result = delivery.deliveries_drain(endpoint_id, resource_key)
    if result.retry_at is not None and not task_in_process(self):
        # In-process a retry waits for the sweep instead. The retry task carries
        # the id of the request whose event it is for, whoever queued this one.
        with log_context_of_request(result.retry_request_id):
            task_publish(deliveries_drain, endpoint_id, resource_key, eta=result.retry_at)
    return result.delivered


@shared_task
def deliveries_sweep() -> int:
    queues = delivery.deliveries_sweep()
    _drain_later(queues)
    return len(queues)
