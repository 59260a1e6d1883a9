"""A webhook receiver for benches: an HTTP/1.1 server on a free loopback port that
answers 200 to every POST and notes, per delivery, the event's id, type,
`createdAt` and when it arrived. For `bench/deliveries.py`, and for any bench that
runs the whole pipeline (payments in, deliveries out):

    from webhook_receiver import WebhookReceiver

    receiver = WebhookReceiver.start()
    endpoint_create(program_id=..., sandbox=False, url=receiver.url, event_types=[...])
    ...                                   # payments, a worker, a webhooks worker
    receiver.wait_for(expected_count, seconds=60)
    print(receiver.summary())             # count, p50/p99 createdAt -> receipt
    receiver.stop()

Latency is from the event's `createdAt` (written in the transaction of the change,
so about its commit) to the moment its POST arrived here, both read from this
machine's clock. A redelivery of an event (at least once) is counted in
`received` but not as a second arrival.
"""

import json
import statistics
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Arrival:
    event_id: str
    type: str
    created_at: float  # unix seconds, from the event's createdAt
    received_at: float  # unix seconds, when its POST arrived

    @property
    def latency(self) -> float:
        return self.received_at - self.created_at


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class WebhookReceiver:
    url: str = ""
    server: ThreadingHTTPServer | None = None
    # The first arrival of each event, by its id.
    arrivals: dict[str, Arrival] = field(default_factory=dict)
    received: int = 0  # POSTs, redeliveries included
    connections: int = 0  # TCP connections the senders opened
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls) -> "WebhookReceiver":
        receiver = cls()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # a sender may keep its connection open

            def setup(self) -> None:
                super().setup()
                with receiver.lock:
                    receiver.connections += 1

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                arrived = time.time()
                receiver.note(body, arrived)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        receiver.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        receiver.server.daemon_threads = True
        receiver.url = f"http://127.0.0.1:{receiver.server.server_address[1]}/hooks"
        threading.Thread(target=receiver.server.serve_forever, daemon=True).start()
        return receiver

    def note(self, body: bytes, arrived: float) -> None:
        event = json.loads(body)
        created = datetime.fromisoformat(event["createdAt"]).timestamp()
        arrival = Arrival(event["eventId"], event["type"], created, arrived)
        with self.lock:
            self.received += 1
            self.arrivals.setdefault(arrival.event_id, arrival)

    def count(self) -> int:
        with self.lock:
            return len(self.arrivals)

    def wait_for(self, count: int, seconds: float) -> bool:
        """Until `count` distinct events arrived, at most `seconds`; whether they did."""
        deadline = time.monotonic() + seconds
        while self.count() < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def snapshot(self) -> list[Arrival]:
        with self.lock:
            return list(self.arrivals.values())

    def latencies(self, since: float = 0.0) -> list[float]:
        """Seconds from createdAt to receipt of the events created at or after `since`."""
        return [arrival.latency for arrival in self.snapshot() if arrival.created_at >= since]

    def summary(self, since: float = 0.0) -> str:
        latencies = self.latencies(since)
        if not latencies:
            return "no deliveries"
        return (
            f"{len(latencies)} events delivered ({self.received} POSTs over {self.connections} "
            f"connections), latency createdAt -> receipt p50={statistics.median(latencies):.3f}s "
            f"p99={percentile(latencies, 0.99):.3f}s max={max(latencies):.3f}s"
        )

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
