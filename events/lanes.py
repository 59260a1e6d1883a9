"""A drain's senders: threads that send one endpoint's deliveries side by side,
each over connections of its own kept for the whole drain (`events.drain`
reads the due sets, keeps the lease and records the outcomes; lanes only send).
"""

import contextvars
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from bankapi.ops import outbound
from bankapi.ops.logs import log_context_of_request
from events.models import Delivery, WebhookEndpoint


@dataclass(frozen=True)
class AttemptOutcome:
    delivered: bool
    status_code: int | None
    error: str
    latency_ms: int = 0


# Sends one delivery over the lane's connections (`events.drain._attempt`).
Attempt = Callable[[WebhookEndpoint, Delivery, outbound.Connections], AttemptOutcome]


# A resource the lanes are done with: its key, what was sent of it, and the error
# that stopped its sending, if one did.
LaneOutcome = tuple[str, list[tuple[Delivery, AttemptOutcome]], BaseException | None]


class Lanes:
    """A drain's senders: `count` threads, each over connections of its own kept
    for the whole drain (so a busy endpoint sees at most `count` connections).

    What the drain hands over is split by resource: one resource's deliveries go
    one after another on one lane, in event order, and a failed attempt leaves the
    rest of them unsent (held back, as the order rule says); different resources
    go side by side, each lane taking the next resource when done with one. Lanes
    only send: the drain's own thread reads, keeps the lease and records."""

    def __init__(self, count: int, attempt: Attempt) -> None:
        self.count = max(1, count)
        self.attempt = attempt
        self.work: queue.SimpleQueue[tuple[WebhookEndpoint, list[Delivery]] | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[LaneOutcome] = queue.SimpleQueue()
        self.stopped = threading.Event()
        self.threads: list[threading.Thread] = []

    def hand(self, endpoint: WebhookEndpoint, due: list[Delivery]) -> set[str]:
        """Queue the deliveries, a resource at a time in the order of its first
        event; answers their resources."""
        resources: dict[str, list[Delivery]] = {}
        for delivery in due:
            resources.setdefault(delivery.resource_key, []).append(delivery)
        if resources and not self.threads:
            for number in range(self.count):
                # Each lane runs in a copy of this thread's context: its log lines
                # and spans belong to this drain.
                thread = threading.Thread(
                    target=contextvars.copy_context().run,
                    args=(self._lane, outbound.Connections()),
                    name=f"webhook-lane-{number}",
                    daemon=True,
                )
                thread.start()
                self.threads.append(thread)
        for deliveries in resources.values():
            self.work.put((endpoint, deliveries))
        return set(resources)

    def waiting(self) -> int:
        """Resources handed over that no lane has taken yet (about)."""
        return self.work.qsize()

    def outcomes(self, timeout: float) -> list[LaneOutcome]:
        """Resources the lanes are done with, with what was sent of each and the
        error that stopped it; waits up to `timeout` for the first."""
        try:
            done = [self.done.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                done.append(self.done.get_nowait())
            except queue.Empty:
                return done

    def stop(self) -> None:
        """No lane starts another send; each resource still queued comes back unsent."""
        self.stopped.set()

    def resume(self) -> None:
        """Sending may start again (only with nothing handed over)."""
        self.stopped.clear()

    def close(self) -> None:
        self.stopped.set()
        for _ in self.threads:
            self.work.put(None)
        for thread in self.threads:
            thread.join()
        self.threads = []

    def _lane(self, connections: outbound.Connections) -> None:
        try:
            while (item := self.work.get()) is not None:
                endpoint, deliveries = item
                sent: list[tuple[Delivery, AttemptOutcome]] = []
                error: BaseException | None = None
                try:
                    for delivery in deliveries:
                        if self.stopped.is_set():
                            break
                        with log_context_of_request(delivery.event.request_id):
                            outcome = self.attempt(endpoint, delivery, connections)
                        sent.append((delivery, outcome))
                        if not outcome.delivered:
                            break  # the rest of its resource waits for this one's retry
                except BaseException as raised:  # noqa: BLE001 - handed to the drain, raised there
                    error = raised
                    self.stopped.set()
                self.done.put((deliveries[0].resource_key, sent, error))
        finally:
            connections.close()
