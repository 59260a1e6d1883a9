"""The outbox relay: with a broker, what takes an event from its table to its endpoints.

A request that writes an event only INSERTs its row (`events/recording.py`); it
publishes nothing to the broker. Every Celery worker runs this relay in a thread
beside its tasks: it polls the outbox for events not fanned out yet (a partial
index holds only those), creates their deliveries in one transaction per batch,
and queues one drain task per endpoint that got some (on the webhooks queue,
`events/drain.py`), none for an endpoint whose drain is running. So:

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
  full batch; a drain already running for the endpoint takes the new deliveries
  in its next set, else the drain task queued now does.
  `bench/event_latency.py` measures commit-to-POST, `bench/deliveries.py` the
  deliveries' rate.

Without a broker (the embedded default) no relay runs: the fan-out happens
in-process after the change commits.
"""

import logging
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from bankapi.ops.outages import failure_log
from events.delivery import outbox_fan_out
from events.tasks import drains_enqueue

logger = logging.getLogger(__name__)


def relay_once(limit: int | None = None, send: Callable[[Iterable[uuid.UUID]], None] | None = None) -> int:
    """One pass: fan out a batch of the outbox and hand the endpoints to drain to
    `send` (by default, a Celery drain task each). Answers how many events it
    fanned out."""
    moved, endpoints = outbox_fan_out(limit or settings.EVENTS_RELAY_BATCH)
    (send or drains_enqueue)(endpoints)
    return moved


class OutboxRelay(threading.Thread):
    """`relay_once` in a loop until stopped; sleeps a poll interval when the outbox
    held less than a batch, and never stops on an error (logged, retried)."""

    def __init__(self, poll_seconds: float, batch: int) -> None:
        super().__init__(name="outbox-relay", daemon=True)
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    moved = relay_once(self.batch)
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

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping.set()
        self.join(timeout)


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
