"""The outbox relay: with a broker, what takes an event from its table to its endpoints.

A request that writes an event only INSERTs its row (`events/recording.py`); it
publishes nothing to the broker. Every Celery worker runs this relay in a thread
beside its tasks: it polls the outbox for events not fanned out yet (a partial
index holds only those), creates their deliveries in one transaction per batch,
and drains the queues that got one. So:

- the relay is polling, not LISTEN/NOTIFY: the database may sit behind PgBouncer
  in transaction pooling, where a session's LISTEN does not survive, and a
  NOTIFY would add a statement to every payment;
- any number of workers run it at once: each batch is claimed with
  `SELECT ... FOR UPDATE SKIP LOCKED`, so two relays take different events, and a
  delivery is unique per (event, endpoint) whatever happens;
- at least once: a relay that dies before its commit leaves the events as they
  were (the next pass or another relay takes them); one that dies after its commit
  but before queueing the drains leaves due pending deliveries, which the beat
  sweep re-drives (`deliveries_sweep`);
- latency: an event waits at most one poll interval (`EVENTS_RELAY_POLL_SECONDS`,
  0.2 s) before its fan-out, and the relay does not sleep while the outbox holds a
  full batch; its own sender threads then POST (see `OutboxRelay`).
  `bench/event_latency.py` measures commit-to-POST.

Without a broker (the embedded default) no relay runs: the fan-out happens
in-process after the change commits.
"""

import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from bankapi.logs import log_context_of_request
from bankapi.outages import failure_log
from bankapi.tasks import task_publish
from events.delivery import deliveries_drain as deliveries_drain_now
from events.delivery import drains_enqueue, outbox_fan_out

Queue = tuple[uuid.UUID | str, str]

logger = logging.getLogger(__name__)


def relay_once(limit: int | None = None, send: Callable[[Iterable[Queue]], None] | None = None) -> int:
    """One pass: fan out a batch of the outbox and hand its queues to `send` (by
    default, Celery drain tasks). Answers how many events it fanned out."""
    moved, queues = outbox_fan_out(limit or settings.EVENTS_RELAY_BATCH)
    (send or drains_enqueue)(queues)
    return moved


class OutboxRelay(threading.Thread):
    """`relay_once` in a loop until stopped; sleeps a poll interval when the outbox
    held less than a batch, and never stops on an error (logged, retried).

    The queues it finds are drained by a few sender threads of its own, not sent
    through the broker to a task: a hop through the broker to a busy worker took
    most of a second on the loaded bench machine. A queue that fails schedules
    its retry as a Celery task, as a drain task would; when the senders are
    behind (a slow receiver), further queues go to Celery tasks instead.
    """

    def __init__(self, poll_seconds: float, batch: int, senders: int = 4) -> None:
        super().__init__(name="outbox-relay", daemon=True)
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.stopping = threading.Event()
        self.senders = ThreadPoolExecutor(max_workers=senders, thread_name_prefix="outbox-sender")
        self.backlog_limit = senders * 50
        self.backlog = threading.BoundedSemaphore(self.backlog_limit)

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    moved = relay_once(self.batch, self.send)
                except Exception:  # noqa: BLE001 - logged (with its traceback unless an outage)
                    # Once per outage, not five times a second (the database away).
                    failure_log(logger, "relay", "outbox relay pass failed; retrying")
                    connection.close()  # a broken connection is replaced on the next pass
                    moved = 0
                if moved < self.batch:
                    self.stopping.wait(self.poll_seconds)
                close_old_connections()
        finally:
            connection.close()

    def send(self, queues: Iterable[Queue]) -> None:
        overflow: set[Queue] = set()
        for queue in queues:
            if self.backlog.acquire(blocking=False):
                self.senders.submit(self._drain, queue)
            else:
                overflow.add(queue)
        drains_enqueue(overflow)

    def _drain(self, queue: Queue) -> None:
        from events.tasks import deliveries_drain

        endpoint_id, resource_key = str(queue[0]), queue[1]
        try:
            result = deliveries_drain_now(endpoint_id, resource_key)
            # What a drain task would log, for the operator following a delivery:
            # under the id of the request its events came from (each attempt
            # was logged under its own event's).
            with log_context_of_request(result.request_id):
                logger.info(
                    "outbox relay: %d delivered to endpoint %s for %s%s",
                    result.delivered,
                    endpoint_id,
                    resource_key,
                    f", retry at {result.retry_at.isoformat()}" if result.retry_at else "",
                )
            if result.retry_at is not None:
                # The retry task carries the id of the request it is for.
                with log_context_of_request(result.retry_request_id):
                    task_publish(deliveries_drain, endpoint_id, resource_key, eta=result.retry_at)
        except Exception:  # noqa: BLE001 - logged (with its traceback unless an outage)
            # Its delivery stays pending (leased at worst): the beat sweep sends it.
            failure_log(logger, "relay-drain", "outbox relay: draining %s failed", resource_key)
        finally:
            self.backlog.release()
            close_old_connections()

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping.set()
        self.join(timeout)
        self.senders.shutdown(wait=False, cancel_futures=True)


_running: list[OutboxRelay] = []


def relay_start(**kwargs: Any) -> None:
    """Start this worker's relay (Celery's `worker_ready`), unless turned off with
    `EVENTS_RELAY_POLL_SECONDS=0`."""
    if settings.EVENTS_RELAY_POLL_SECONDS <= 0 or _running:
        return
    relay = OutboxRelay(settings.EVENTS_RELAY_POLL_SECONDS, settings.EVENTS_RELAY_BATCH)
    relay.start()
    _running.append(relay)


def relay_stop(**kwargs: Any) -> None:
    """Stop it at the worker's shutdown (Celery's `worker_shutdown`)."""
    while _running:
        _running.pop().stop()
