"""The moving parts of bench/pipeline.py: the local webhook receiver, the
service's processes (Celery worker and beat) started and stopped by the bench,
the /metrics sampler, wrk paced to a rate, and a statement counter."""

import json
import math
import os
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from payments_load import run_wrk
from payments_seed import Target
from serving import ROOT, fail, free_port, server_command


@dataclass
class Arrival:
    created: float  # the event's createdAt, unix seconds
    arrived: float  # its first POST at the receiver
    type: str
    request_id: str | None


class Receiver:
    """An HTTP receiver on a loopback port (keep-alive, answers 200 at once) that
    notes each event's first arrival and counts repeats."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrivals: dict[str, Arrival] = {}
        self.repeats = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                arrived = time.time()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver.note(json.loads(body), arrived)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def note(self, payload: dict, arrived: float) -> None:
        created = datetime.fromisoformat(payload["createdAt"]).timestamp()
        data = payload.get("data") or {}
        arrival = Arrival(created, arrived, payload["type"], data.get("requestId"))
        with self.lock:
            if payload["eventId"] in self.arrivals:
                self.repeats += 1
            else:
                self.arrivals[payload["eventId"]] = arrival

    def count(self) -> int:
        with self.lock:
            return len(self.arrivals)

    def snapshot(self) -> dict[str, Arrival]:
        with self.lock:
            return dict(self.arrivals)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Processes:
    """The service processes this bench starts, each in a process group of its
    own with its output in the work folder; `stop_all` ends every one of them
    (SIGTERM, then SIGKILL after a grace period), and only them."""

    def __init__(self, work_dir: Path, env: dict[str, str]) -> None:
        self.work_dir = work_dir
        self.env = env
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = (self.work_dir / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **(env or self.env)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.running[name] = process
        return process

    def log_tail(self, name: str, chars: int = 2000) -> str:
        path = self.work_dir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def check_alive(self) -> str | None:
        """The name of a started process that has exited, if any."""
        return next((name for name, process in self.running.items() if process.poll() is not None), None)

    def stop(self, name: str, grace: float = 30.0) -> None:
        process = self.running.pop(name, None)
        if process is None or process.poll() is not None:
            return
        try:
            group = os.getpgid(process.pid)
        except ProcessLookupError:
            return
        own_group = group == process.pid  # started with start_new_session
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            try:
                if own_group:
                    os.killpg(group, sig)
                else:
                    process.send_signal(sig)
            except ProcessLookupError:
                return
            try:
                process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)


def serve(processes: Processes, workers: int) -> str:
    """gunicorn as deploy/gunicorn.conf.py configures it, on a free loopback port,
    its access lines in the work folder; answers its base URL once /healthz does."""
    for _ in range(5):
        port = free_port()
        process = processes.start("gunicorn", server_command("gunicorn", port, workers))
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:  # noqa: S310
                    if answer.status == 200:
                        return base
            except OSError:
                time.sleep(0.2)
        processes.stop("gunicorn")
    fail(f"gunicorn did not start:\n{processes.log_tail('gunicorn')}")


def celery_command(*arguments: str) -> list[str]:
    return [str(ROOT / ".venv" / "bin" / "celery"), "-A", "config", *arguments]


@dataclass
class Samples:
    """What /metrics showed, scraped every few seconds."""

    lags: list[tuple[float, float]] = field(default_factory=list)  # (time, settlement lag s)
    queues: dict[str, int] = field(default_factory=dict)  # largest length seen per queue
    outbox_max: float = 0.0
    failures: int = 0
    last_failure: str = ""

    def lag_max(self, since: float, until: float) -> float | None:
        seen = [lag for at, lag in self.lags if since <= at <= until]
        return max(seen) if seen else None


def metrics_parse(text: str) -> dict[str, float]:
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                continue
    return values


class MetricsSampler(threading.Thread):
    """Scrapes the service's /metrics every `interval` seconds until stopped,
    keeping the settlement lag, the queue lengths and the outbox's age."""

    def __init__(self, base: str, token: str, interval: float) -> None:
        super().__init__(name="metrics-sampler", daemon=True)
        self.url = f"{base}/metrics"
        self.token = token
        self.interval = interval
        self.samples = Samples()
        self.stopping = threading.Event()

    def scrape(self) -> None:
        request = urllib.request.Request(self.url, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
                values = metrics_parse(answer.read().decode())
        except OSError as error:
            self.samples.failures += 1
            self.samples.last_failure = str(error)
            return
        now = time.time()
        if "bankapi_settlement_lag_seconds" in values:
            self.samples.lags.append((now, values["bankapi_settlement_lag_seconds"]))
        for name, value in values.items():
            if name.startswith("bankapi_celery_queue_length{"):
                queue = name.split('queue="', 1)[1].split('"', 1)[0]
                self.samples.queues[queue] = max(self.samples.queues.get(queue, 0), int(value))
        self.samples.outbox_max = max(
            self.samples.outbox_max, values.get("bankapi_outbox_oldest_pending_seconds", 0)
        )

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            self.scrape()

    def stop(self) -> Samples:
        self.stopping.set()
        self.join(30)
        self.scrape()
        return self.samples


@dataclass
class Intake:
    accepted: int
    seconds: float
    non2xx: int
    p99_ms: float
    delay_ms: int
    sample: str  # the first non-2xx answer, if any

    @property
    def per_second(self) -> float:
        return self.accepted / self.seconds if self.seconds else 0.0


def paced_intake(
    base: str,
    targets: Callable[[], list[Target]],
    work_dir: Path,
    *,
    clients: int,
    seconds: int,
    rate: float,
    latency_ms: float,
    segment: int = 30,
) -> Intake:
    """wrk for `seconds` at about `rate` payments/s: each connection waits
    between requests (bench/payments.lua's delay). Run in segments of `segment`
    seconds, each one's delay corrected from what the last achieved (a
    connection's period is its answer time plus its wait), each with the
    targets `targets` answers then (fresh access tokens: they live 15 minutes)."""
    segments = max(1, math.ceil(seconds / segment))
    length = max(1, round(seconds / segments))
    period_ms = clients * 1000 / rate
    delay = max(1, int(period_ms - latency_ms))
    accepted, elapsed, non2xx, p99, sample = 0, 0.0, 0, 0.0, ""
    for _ in range(segments):
        result = run_wrk(base, targets(), work_dir, clients=clients, seconds=length, delay_ms=delay)
        accepted += result.requests - result.non2xx
        elapsed += result.seconds
        non2xx += result.non2xx
        p99 = max(p99, result.p99_ms)
        sample = sample or result.sample
        if result.requests:
            answer_ms = clients * 1000 * result.seconds / result.requests - delay
            delay = max(1, int(period_ms - max(0.0, answer_ms)))
    return Intake(accepted, elapsed, non2xx, p99, delay, sample)


class QueryCounter:
    """Counts the statements Django sends (savepoints included; BEGIN and COMMIT
    are the driver's and are added by the caller, two per transaction)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else math.inf


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _process_cpu() -> dict[int, tuple[int, str, float]]:
    """Every process's (process group, command line, CPU seconds so far; for this
    process, its reaped children's too: the wrk runs). Linux's /proc; empty elsewhere."""
    found = {}
    for entry in Path("/proc").iterdir() if Path("/proc/stat").exists() else []:
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        pid = int(entry.name)
        ticks = int(fields[11]) + int(fields[12])
        if pid == os.getpid():
            ticks += int(fields[13]) + int(fields[14])
        found[pid] = (int(fields[2]), command, ticks / _TICKS)
    return found


def _host_busy() -> float:
    """CPU seconds the whole host has spent busy (every core), from /proc/stat."""
    try:
        values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / _TICKS


class CpuShares:
    """Where the host's CPU went between `start` and `stop`: per process the bench
    started (by its process group: gunicorn, each worker, beat), the PostgreSQL
    backends of the bench database, this process (the receiver, the sampler, wrk's
    driver and the wrk runs), and the rest of the host (other work on it)."""

    def __init__(self, processes: Processes, database: str) -> None:
        self.processes = processes
        self.database = database

    def _processes(self) -> dict[int, tuple[str, float]]:
        """Each process of interest: its name here and its CPU seconds so far."""
        groups = {
            process.pid: name for name, process in self.processes.running.items() if process.poll() is None
        }
        found = {}
        for pid, (group, command, seconds) in _process_cpu().items():
            if pid == os.getpid():
                found[pid] = ("bench", seconds)
            elif group in groups:
                found[pid] = (groups[group], seconds)
            elif command.startswith("postgres:") and f" {self.database} " in command:
                found[pid] = ("postgres", seconds)
        return found

    def start(self) -> None:
        self.began, self.before, self.busy = time.monotonic(), self._processes(), _host_busy()

    def stop(self) -> str:
        """The shares, in cores. A process that ended meanwhile is left out (its
        time counts as the rest of the host's); one that started counts whole."""
        seconds = max(time.monotonic() - self.began, 1e-6)
        busy = _host_busy() - self.busy
        shares: dict[str, float] = {}
        for pid, (name, now) in self._processes().items():
            before = self.before.get(pid)
            spent = now - before[1] if before is not None and before[0] == name else now
            shares[name] = shares.get(name, 0.0) + spent / seconds
        mine = sum(shares.values())
        ordered = sorted(shares.items(), key=lambda item: -item[1])
        parts = ", ".join(f"{name} {share:.2f}" for name, share in ordered)
        rest = max(busy / seconds - mine, 0.0)
        return (
            f"CPU (cores, of {os.cpu_count()}): {parts}; rest of the host {rest:.2f}; "
            f"host busy {busy / seconds:.2f}"
        )
