"""Webhook delivery latency through the outbox relay: from a payment's answer (its
commit) to the webhook POST at a receiver.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    BENCH_REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python bench/event_latency.py

As deployed with a broker: the Procfile's two Celery workers (prefork, 2 processes
each), `worker` on the default queue and `webhooks` on the deliveries' queue, both
running the outbox relay; this process makes payments through
Django's test client at a steady rate, each writing its `payment_request.accepted`
event and publishing nothing; a receiver on a loopback port notes when each
event's POST arrives. Prints p50, p99 and the largest latency; the target is under
one second. Production settings with `WEBHOOKS_ALLOW_LOOPBACK` on (so the
receiver may be plain http on loopback), with secrets generated for the run.

THE BENCH DATABASE IS WIPED (every table truncated) at the start, and the Redis
database emptied before and after.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from payments_seed import seed  # noqa: E402
from serving import broker_bench_environment, django_start, fail, flush_redis  # noqa: E402


def receiver_start(arrivals: dict[str, float]) -> tuple[ThreadingHTTPServer, str]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            arrived = time.time()
            request_id = json.loads(body)["data"]["requestId"]
            with lock:
                arrivals.setdefault(request_id, arrived)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/hooks"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=300, help="payments made (300)")
    parser.add_argument("--rate", type=float, default=50.0, help="payments per second offered (50)")
    parser.add_argument(
        "--worker",
        default="--concurrency=2",
        help="options of each Celery worker (the Procfile's: --concurrency=2)",
    )
    parser.add_argument("--poll", type=float, default=None, help="EVENTS_RELAY_POLL_SECONDS (0.2)")
    args = parser.parse_args()

    bench = broker_bench_environment("latency")
    env, redis_url, work_dir = bench.env, bench.redis_url, bench.work_dir
    django_start(env)
    from django.db import connection
    from django.test import Client

    from events.endpoints import endpoint_create
    from events.models import EventType

    _, special = seed(1)
    target = special["hot"]
    arrivals: dict[str, float] = {}
    server, url = receiver_start(arrivals)
    from bankapi.models import Account

    program_id = Account.objects.get(id=target.account_id).program_id
    endpoint_create(
        program_id=program_id, sandbox=False, url=url, event_types=[EventType.PAYMENT_REQUEST_ACCEPTED]
    )
    connection.close()

    log = (work_dir / "worker.log").open("wb")
    workers = [
        subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "celery"),
                "-A",
                "config",
                "worker",
                "-Q",
                queue_name,
                "-n",
                f"{queue_name}@%h",
                *args.worker.split(),
                "--loglevel=WARNING",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        for queue_name in (env["CELERY_TASK_DEFAULT_QUEUE"], env["CELERY_WEBHOOKS_QUEUE"])
    ]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {target.token}")
    body = {"amount": "1.00", "reference": "Latency", "beneficiaryId": target.beneficiary_id}

    def pay() -> tuple[str, float]:
        answer = client.post(
            target.path, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())
        )
        answered = time.time()
        if answer.status_code != 200:
            fail(f"payment answered {answer.status_code}: {answer.content[:300]!r}")
        return answer.json()["data"]["bankTransfer"]["requestId"], answered

    try:
        # The worker is up once a first payment's event arrives.
        first, _ = pay()
        deadline = time.monotonic() + 60
        while first not in arrivals:
            if time.monotonic() > deadline or any(worker.poll() is not None for worker in workers):
                fail(f"the worker delivered nothing in 60 s (log: {work_dir / 'worker.log'})")
            time.sleep(0.05)
        committed: dict[str, float] = {}
        interval = 1.0 / args.rate
        started = time.monotonic()
        for n in range(args.payments):
            time.sleep(max(0.0, started + n * interval - time.monotonic()))
            request_id, answered = pay()
            committed[request_id] = answered
        deadline = time.monotonic() + 30
        while any(request_id not in arrivals for request_id in committed) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(30)
        log.close()
        server.shutdown()
        flush_redis(redis_url)

    latencies = [(arrivals[r] - t) * 1000 for r, t in committed.items() if r in arrivals]
    missing = len(committed) - len(latencies)
    p50, p99 = statistics.median(latencies), percentile(latencies, 0.99)
    print(
        f"event latency, payment answered -> webhook POST received, {len(committed)} payments at "
        f"{args.rate:g}/s, relay poll {env.get('EVENTS_RELAY_POLL_SECONDS', '0.2')} s: "
        f"p50={p50:.0f}ms p99={p99:.0f}ms max={max(latencies):.0f}ms undelivered={missing} "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    met = missing == 0 and p99 < 1000
    print(f"target p99 < 1000 ms: {'met' if met else 'NOT MET'}")
    raise SystemExit(0 if met else 1)


if __name__ == "__main__":
    main()
