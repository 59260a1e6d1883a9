"""Payments per second with and without a flood of failed sign-ins.

    BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/sign_in_flood.py [options]

Serves the API with gunicorn on production settings (the real Argon2 cost) and
drives payments from client threads, each on an account of its own, for
`--duration` seconds per mode:

- quiet: payments only;
- flood: payments while flooder threads send `--flood-rate` failed sign-ins a
  second in all, open loop (each keeps its pace whatever the answers, with one
  request in flight), for unknown e-mails, each from an address of its own
  through X-Forwarded-For with TRUSTED_PROXY_COUNT=1, so that no lockout,
  client throttle or address budget stops them: only the bound on password
  checks in flight (`PASSWORD_CHECKS_IN_FLIGHT`, `PASSWORD_CHECK_WAIT_SECONDS`,
  taken from the environment like every setting) can;
- flood, unbounded: the same with the bound lifted (PASSWORD_CHECKS_IN_FLIGHT as
  large as the server's threads), as before it existed.

Prints payments/s, their p95 and the flood's answers per mode, and as its last
line `ratio=` (payments/s under the flood over quiet payments/s, with the bound)
and `unbounded=` (the same without it).

The bound is per process: it takes effect when a process serves several requests
at once (`--threads` above 1). THE BENCH DATABASE IS WIPED (every table
truncated): BENCH_DATABASE_URL, else DATABASE_URL.
"""

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from payments_seed import Target, seed  # noqa: E402
from serving import deployed_threads, django_start, fail, free_port, production_environment  # noqa: E402


@dataclass
class Mode:
    name: str
    payments: int = 0
    refused: Counter = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)
    flood: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def describe(self) -> str:
        p95 = statistics.quantiles(self.latencies_ms, n=20)[-1] if len(self.latencies_ms) > 1 else 0.0
        flood = ", ".join(f"{status}: {count}" for status, count in sorted(self.flood.items())) or "none"
        refused = dict(self.refused) or "none"
        return (
            f"{self.name}: payments/s={self.payments_per_second:.1f} p95={p95:.0f}ms "
            f"non-200 payments={refused}; flood answers: {flood}"
        )

    @property
    def payments_per_second(self) -> float:
        return self.payments / self.seconds if self.seconds else 0.0


def post(port: int, path: str, body: dict, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", **headers}
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def flood_address() -> str:
    """A random IPv6 address in a /64 of its own (the client throttle counts by /64)."""
    block = uuid.uuid4().hex
    return f"2001:db8:{block[:4]}:{block[4:8]}::1"


def start_gunicorn(env: dict[str, str], workers: int, threads: int) -> tuple[subprocess.Popen, int]:
    port = free_port()
    process = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "gunicorn"),
            "config.wsgi:application",
            f"--config={ROOT / 'deploy' / 'gunicorn.conf.py'}",
            f"--workers={workers}",
            f"--threads={threads}",
            f"--bind=127.0.0.1:{port}",
            "--log-level=warning",
            "--timeout=60",
        ],
        cwd=ROOT,
        # WEB_THREADS as the environment template sets it: the waiters per process follow it.
        env={**os.environ, **env, "WEB_THREADS": str(threads)},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:  # noqa: S310
                if answer.status == 200:
                    return process, port
        except OSError:
            time.sleep(0.2)
    process.terminate()
    process.wait()
    fail("gunicorn did not start")
    raise AssertionError("unreachable")


def run_mode(
    mode: Mode,
    port: int,
    targets: list[Target],
    program_id: str,
    seconds: float,
    flooders: int = 0,
    flood_rate: float = 0.0,
) -> None:
    lock = threading.Lock()
    stop = threading.Event()

    def pay(target: Target) -> None:
        headers = {"Authorization": f"Bearer {target.token}"}
        body = {"amount": "1.00", "reference": "Bench", "beneficiaryId": target.beneficiary_id}
        while not stop.is_set():
            started = time.monotonic()
            status = post(port, target.path, body, {**headers, "Idempotency-Key": str(uuid.uuid4())})
            elapsed_ms = (time.monotonic() - started) * 1000
            with lock:
                if status == 200:
                    mode.payments += 1
                    mode.latencies_ms.append(elapsed_ms)
                else:
                    mode.refused[status] += 1

    def flood() -> None:
        # Open loop: each flooder keeps its pace whatever the answers, as an
        # attacker would, up to its one request in flight.
        interval = flooders / flood_rate
        next_at = time.monotonic()
        while not stop.is_set():
            status = post(
                port,
                "/v1/auth/login",
                {"email": f"nobody-{uuid.uuid4().hex}@bench.example", "password": "not the password 42"},
                {"X-Program-Id": program_id, "X-Forwarded-For": flood_address()},
            )
            with lock:
                mode.flood[status] += 1
            next_at += interval
            stop.wait(max(0.0, next_at - time.monotonic()))

    threads = [threading.Thread(target=pay, args=(target,)) for target in targets]
    threads += [threading.Thread(target=flood) for _ in range(flooders)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    mode.seconds = time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=15, help="seconds per mode (15)")
    parser.add_argument("--payers", type=int, default=4, help="paying client threads, one account each (4)")
    parser.add_argument(
        "--flood-rate", type=float, default=40, help="failed sign-ins sent per second, in all (40)"
    )
    parser.add_argument(
        "--flooders", type=int, default=32, help="failed sign-in client threads: most in flight at once (32)"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (2)")
    parser.add_argument(
        "--threads", type=int, default=deployed_threads(), help="threads per gunicorn worker (as deployed)"
    )
    args = parser.parse_args()

    database_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL database the bench may wipe")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-sign-in-flood-"))
    env = production_environment(database_url, work_dir)
    # The flood's 401s and 429s would fill the screen (django.request logs each 4xx).
    env.update(TRUSTED_PROXY_COUNT="1", LOG_LEVEL="ERROR")
    os.environ.pop("REDIS_URL", None)  # tasks in-process, budgets in each process's memory
    django_start(env)
    from django.conf import settings
    from django.db import connection

    from bankapi.models import Program

    targets, _ = seed(args.payers)
    program_id = str(Program.objects.get().id)
    connection.close()
    bound = f"PASSWORD_CHECKS_IN_FLIGHT={settings.PASSWORD_CHECKS_IN_FLIGHT}"
    print(
        f"bench/sign_in_flood: gunicorn {args.workers} workers x {args.threads} threads, "
        f"{args.payers} payers, {args.flood_rate:.0f} failed sign-ins/s from {args.flooders} flooders, "
        f"{args.duration:.0f}s per mode, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )

    modes = [
        (Mode("quiet"), {}, 0),
        (Mode(f"flood, bounded ({bound}, wait {settings.PASSWORD_CHECK_WAIT_SECONDS}s)"), {}, args.flooders),
        (Mode("flood, unbounded"), {"PASSWORD_CHECKS_IN_FLIGHT": str(args.threads)}, args.flooders),
    ]
    try:
        for mode, extra, flooders in modes:
            server, port = start_gunicorn({**env, **extra}, args.workers, args.threads)
            try:
                run_mode(mode, port, targets[:1], program_id, 1)  # warm-up
                mode.payments, mode.latencies_ms, mode.refused = 0, [], Counter()
                run_mode(mode, port, targets, program_id, args.duration, flooders, args.flood_rate)
            finally:
                server.terminate()
                server.wait()
            print(mode.describe())
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    quiet, bounded, unbounded = (mode for mode, _, _ in modes)
    print(
        f"ratio={bounded.payments_per_second / quiet.payments_per_second:.2f} "
        f"unbounded={unbounded.payments_per_second / quiet.payments_per_second:.2f}"
    )


if __name__ == "__main__":
    main()
