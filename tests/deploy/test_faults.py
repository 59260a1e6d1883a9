"""The deployment of deploy/ under a steady payment load while what it stands on fails.

A PostgreSQL cluster, a Redis and a PgBouncer of this test's own (the machine's
shared ones are never touched), on kernel-picked ports; PgBouncer from
deploy/pgbouncer.ini, the environment from deploy/bankapi.env.example, gunicorn,
a Celery worker and beat from deploy/Procfile, production settings. Clients pay
steadily, each payment with its own Idempotency-Key, retrying a 503 with the same
key after `Retry-After` as a client should, while:

- PostgreSQL is restarted (fast shutdown), then killed (SIGKILL, every process
  of the cluster) and started again after a few seconds away;
- PgBouncer is restarted;
- Redis is stopped for a few seconds, then started again;
- PgBouncer is killed (SIGKILL) and started again;
- the web node is frozen (SIGSTOP) for 3 s, then thawed.

It shows: while the database is away every answer is a 503 with `Retry-After`
(never a 500, never a broken connection); payments are served again within 5 s of
it being back; `/readyz` is 503 while the database is away and 200 while only
Redis is; every key paid exactly once (the account's balance and payment count
match the 200s), `check_ledger` green; and the series an operator alerts on move
(`bankapi_redis_up`, 503s counted, payments counted across processes).
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import requires_postgres
from tests.deploy.conftest import report_figures
from tests.deploy.test_topology import HTTPS, PGBOUNCER, Deployment, procfile
from tests.proof.processes import CeleryWorker, Gunicorn, children_of, free_port, kill, request, shell_command

PG_BIN = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)), None)
REDIS_SERVER = shutil.which("redis-server")
BACK_WITHIN_SECONDS = 5.0

pytestmark = [
    pytest.mark.postgres,
    requires_postgres,
    pytest.mark.skipif(PGBOUNCER is None, reason="needs PgBouncer: apt-get install pgbouncer"),
    pytest.mark.skipif(PG_BIN is None, reason="needs PostgreSQL's server binaries (initdb, pg_ctl)"),
    pytest.mark.skipif(REDIS_SERVER is None, reason="needs redis-server"),
]


def as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as its own user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class FaultDeployment(Deployment):
    """The deployment of test_topology, over a PostgreSQL and a Redis of its own."""

    def __init__(self, folder: Path):
        super().__init__(folder)
        self.pg_host, self.pg_port, self.pg_user, self.pg_password = "127.0.0.1", free_port(), "postgres", ""
        self.pg_data = folder / "pgdata"
        self.redis_port = free_port()
        self.redis_url = f"redis://127.0.0.1:{self.redis_port}/0"
        self.redis: subprocess.Popen | None = None
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres")

    # -- PostgreSQL ------------------------------------------------------------------
    def pg_ctl(self, *arguments: str) -> None:
        result = subprocess.run(  # noqa: S603
            as_postgres([f"{PG_BIN}/pg_ctl", "-D", str(self.pg_data), "-l", str(self.folder / "pg.log"),
                         "-w", "-t", "60", *arguments]),
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr + self.log("pg")

    def postgres_create(self) -> None:
        result = subprocess.run(  # noqa: S603
            as_postgres([f"{PG_BIN}/initdb", "-D", str(self.pg_data), "-A", "trust", "-U", "postgres",
                         "--no-sync"]),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        with (self.pg_data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.pg_port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.folder}'\nfsync = off\nmax_connections = 60\n"
            )
        self.pg_ctl("start")

    def postgres_pids(self) -> list[int]:
        postmaster = int((self.pg_data / "postmaster.pid").read_text().split()[0])
        return [postmaster, *children_of(postmaster)]

    def postgres_kill(self) -> None:
        """SIGKILL to every process of the cluster, as a crashed host would."""
        pids = self.postgres_pids()
        for pid in pids:
            kill(pid)
        deadline = time.monotonic() + 10
        while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)

    # -- Redis -----------------------------------------------------------------------
    def redis_start(self) -> None:
        self.redis = subprocess.Popen(  # noqa: S603
            [REDIS_SERVER, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.folder)],
            stdout=(self.folder / "redis.log").open("ab"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while (
            subprocess.run(  # noqa: S603
                ["redis-cli", "-p", str(self.redis_port), "ping"], capture_output=True, text=True
            ).stdout.strip()
            != "PONG"
        ):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)

    def redis_stop(self) -> None:
        assert self.redis is not None
        self.redis.send_signal(signal.SIGKILL)
        self.redis.wait(timeout=10)

    # -- PgBouncer -------------------------------------------------------------------
    def pgbouncer_restart(self, *, kill: bool = False) -> None:
        """Stopped (SIGTERM) or killed (SIGKILL, its clients' connections cut), then started again."""
        bouncer = next(p for p in self.processes if isinstance(p, subprocess.Popen) and p.poll() is None)
        if kill:
            bouncer.kill()
        else:
            bouncer.terminate()
        bouncer.wait(timeout=10)
        self.processes.remove(bouncer)
        if kill:
            time.sleep(2)  # away a moment: requests meanwhile answer 503
        self.start_pgbouncer()

    def web_node_signal(self, signal_number: int) -> None:
        """To the web node's master and each of its workers (SIGSTOP: a frozen node)."""
        master = self.web[0].process.pid
        for pid in (master, *children_of(master)):
            os.kill(pid, signal_number)

    # -- The service's processes (one web node, one worker, beat) --------------------
    def start_service(self) -> None:
        commands = procfile()
        self.web = [Gunicorn(self.env, 2, self.folder / "web1.log", command=shell_command(commands["web"]))]
        self.processes += self.web
        self.workers = [
            CeleryWorker(
                {**self.env, "CELERY_NODE_NAME": "worker1"},
                self.folder / "worker1.log",
                command=shell_command(commands["worker"]),
            )
        ]
        self.processes += self.workers
        self.beat = CeleryWorker(self.env, self.folder / "beat.log", command=shell_command(commands["beat"]))
        self.processes.append(self.beat)

    def stop(self) -> None:
        super().stop()
        if self.redis is not None and self.redis.poll() is None:
            self.redis.kill()
            self.redis.wait()
        if (self.pg_data / "postmaster.pid").exists():
            subprocess.run(  # noqa: S603
                as_postgres([f"{PG_BIN}/pg_ctl", "-D", str(self.pg_data), "-m", "immediate", "stop"]),
                capture_output=True, timeout=60,
            )  # fmt: skip


class Load:
    """Clients paying 1.00 each, steadily, each payment with its own key, a 503 or a
    409 (the key still held) retried with the same key after the answer's
    Retry-After (at most a second here)."""

    def __init__(self, deployment: FaultDeployment, clients: int = 2):
        ids = deployment.ids
        self.port = deployment.web[0].port
        self.path = f"/v1/customers/{ids['customerId']}/accounts/{ids['accountId']}/payments"
        self.token = ids["token"]
        self.stopping = threading.Event()
        self.lock = threading.RLock()
        self.answered = threading.Condition(self.lock)  # notified at every answer
        # (monotonic time answered, status, Retry-After or None, code or None)
        self.answers: list[tuple[float, int | None, str | None, str | None]] = []
        self.paid: list[str] = []  # keys answered 200
        # Keys whose 200 was a replay: an earlier attempt committed the payment but
        # its answer was lost (PgBouncer killed between the commit and its reply,
        # the client answered 503); the retry replays it.
        self.replayed: list[str] = []
        self.unfinished: list[str] = []
        self.threads = [threading.Thread(target=self.client, daemon=True) for _ in range(clients)]

    def client(self) -> None:
        body = {
            "amount": "1.00",
            "reference": "Fault test",
            "payee": {
                "name": "Jane",
                "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
            },
        }
        while not self.stopping.is_set():
            key = str(uuid.uuid4())
            headers = {**HTTPS, "Authorization": f"Bearer {self.token}", "Idempotency-Key": key}
            deadline = time.monotonic() + 120
            while True:
                try:
                    status, answer_headers, answer = request(self.port, "POST", self.path, body, headers)
                    code = answer.get("code") if isinstance(answer, dict) else None
                    retry_after = answer_headers.get("Retry-After")
                except OSError as error:
                    status, retry_after, code = None, None, type(error).__name__
                with self.answered:
                    self.answers.append((time.monotonic(), status, retry_after, code))
                    self.answered.notify_all()
                if status == 200:
                    with self.lock:
                        self.paid.append(key)
                        if answer_headers.get("Idempotent-Replayed") == "true":
                            self.replayed.append(key)
                    break
                if time.monotonic() > deadline or status not in {503, 409, 429, None}:
                    with self.lock:
                        self.unfinished.append(key)
                    break
                time.sleep(min(float(retry_after or 1), 1.0))
            time.sleep(0.05)

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=150)

    def wait_for(self, moment: float, enough, what: str, timeout: float = 30) -> list:
        """The answers after `moment`, once `enough(answers)` holds: woken by each
        answer, not polling."""
        with self.answered:
            if not self.answered.wait_for(lambda: enough(self.since(moment)), timeout=timeout):
                raise AssertionError(f"{what}: not within {timeout} s")
            return self.since(moment)

    def paid_after(self, moment: float, count: int = 3, timeout: float = 30) -> None:
        """Once `count` payments were answered 200 after `moment`: served steadily again."""
        self.wait_for(
            moment,
            lambda answers: sum(status == 200 for _, status, _, _ in answers) >= count,
            f"{count} payments answered 200",
            timeout,
        )

    def first_200_after(self, moment: float, timeout: float = 30) -> float:
        """Seconds from `moment` to the first payment answered 200 after it."""
        answers = self.wait_for(
            moment, lambda answers: any(a[1] == 200 for a in answers), "no payment answered 200", timeout
        )
        return next(at for at, status, _, _ in answers if status == 200) - moment

    def since(self, moment: float) -> list[tuple[float, int | None, str | None, str | None]]:
        with self.lock:  # re-entrant: also called holding it, from `wait_for`
            return [answer for answer in self.answers if answer[0] > moment]


def scrape(deployment: FaultDeployment) -> tuple[float, dict]:
    started = time.monotonic()
    headers = {**HTTPS, "Authorization": f"Bearer {deployment.env['METRICS_TOKEN']}"}
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", deployment.web[0].port, timeout=15)
    connection.request("GET", "/metrics", headers=headers)
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    assert response.status == 200, text[:300]
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return time.monotonic() - started, samples


def readiness(deployment: FaultDeployment) -> tuple[int, dict]:
    status, _, body = request(deployment.web[0].port, "GET", "/readyz", headers=HTTPS)
    return status, body


def readiness_once(deployment: FaultDeployment, ready, what: str, timeout: float = 10) -> tuple[int, dict]:
    """/readyz's answer once `ready(status, body)` holds, probed every 0.1 s: what a
    load balancer's probe sees as soon as the node sees it."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = readiness(deployment)
        if ready(status, body):
            return status, body
        assert time.monotonic() < deadline, f"{what}: /readyz answered {status} {body}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def deployment():
    folder = Path(tempfile.mkdtemp(prefix="bankapi-faults-"))
    os.chmod(folder, 0o755)
    deployment = FaultDeployment(folder)
    started = time.monotonic()
    try:
        deployment.postgres_create()
        deployment.redis_start()
        deployment.fresh_database_and_redis()
        deployment.start_pgbouncer()
        deployment.environment_file()
        # A steady load from one address stands for many clients here.
        deployment.env.update(REQUEST_BUDGET_PER_TOKEN="1000000", REQUEST_BUDGET_PER_ADDRESS="1000000")
        os.makedirs(deployment.env["BANKAPI_VAR_DIR"], exist_ok=True)
        migrated = deployment.manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        deployment.start_service()
        deployment.ids = deployment.driver("setup")
        report_figures("Fault test", f"topology up in {time.monotonic() - started:.1f} s")
        yield deployment
    finally:
        deployment.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_faults_under_a_steady_payment_load(deployment):
    _, before = scrape(deployment)
    load = Load(deployment)
    load.start()
    figures: list[str] = []
    try:
        load.paid_after(0)  # the load is running

        # 1. PostgreSQL restarted (fast shutdown).
        deployment.pg_ctl("restart", "-m", "fast")
        back = time.monotonic()
        figures.append(
            f"PostgreSQL restarted: payments again {load.first_200_after(back):.2f} s after it was back"
        )
        assert load.first_200_after(back) <= BACK_WITHIN_SECONDS
        load.paid_after(back)

        # 2. PostgreSQL killed, away 8 s, started again (requests wait at most
        # PgBouncer's query_wait_timeout, 5 s, for it before their 503).
        deployment.postgres_kill()
        killed = time.monotonic()
        status, body = readiness_once(
            deployment, lambda status, _: status == 503, "the database away", timeout=20
        )
        assert body["checks"]["database"] == "unavailable", body
        took, away = scrape(deployment)
        assert took < 3, f"/metrics waited {took:.1f} s on a database that is away"
        assert ("bankapi_outbox_oldest_pending_seconds", ()) not in away
        time.sleep(max(0.0, killed + 8 - time.monotonic()))  # the fault itself: away 8 s
        away_answers = load.since(killed + 1)
        deployment.pg_ctl("start")
        back = time.monotonic()
        assert away_answers and {status for _, status, _, _ in away_answers} == {503}, Counter(
            (status, code) for _, status, _, code in away_answers
        )
        assert all(retry == "1" for _, _, retry, _ in away_answers)
        figures.append(
            f"PostgreSQL killed 8 s: {len(away_answers)} answers while away, all 503 with Retry-After; "
            f"payments again {load.first_200_after(back):.2f} s after it was back"
        )
        assert load.first_200_after(back) <= BACK_WITHIN_SECONDS
        load.paid_after(back)

        # 3. PgBouncer restarted.
        restarting = time.monotonic()
        deployment.pgbouncer_restart()
        back = time.monotonic()
        figures.append(
            f"PgBouncer restarted in {back - restarting:.2f} s: "
            f"payments again {load.first_200_after(back):.2f} s after"
        )
        assert load.first_200_after(back) <= BACK_WITHIN_SECONDS
        load.paid_after(back)

        # 4. Redis stopped 5 s: payments go on, the node stays ready, the metric says so.
        deployment.redis_stop()
        stopped = time.monotonic()
        status, body = readiness_once(
            deployment, lambda _, body: body["checks"].get("redis") == "unavailable", "Redis away"
        )
        assert status == 200 and body["checks"] == {"database": "ok", "redis": "unavailable"}, body
        _, redis_away = scrape(deployment)
        assert redis_away[("bankapi_redis_up", ())] == 0
        time.sleep(max(0.0, stopped + 5 - time.monotonic()))  # the fault itself: stopped 5 s
        during = load.since(stopped + 0.5)
        deployment.redis_start()
        assert during and {status for _, status, _, _ in during} == {200}, Counter(
            (status, code) for _, status, _, code in during
        )
        figures.append(f"Redis stopped 5 s: {len(during)} payments answered, all 200; /readyz 200")
        readiness_once(deployment, lambda _, body: body["checks"]["redis"] == "ok", "Redis back")

        # 5. PgBouncer killed (SIGKILL), away 2 s, started again.
        deployment.pgbouncer_restart(kill=True)
        back = time.monotonic()
        figures.append(
            f"PgBouncer killed: payments again {load.first_200_after(back):.2f} s after it was back"
        )
        assert load.first_200_after(back) <= BACK_WITHIN_SECONDS
        load.paid_after(back)

        # 6. The web node frozen 3 s (SIGSTOP): a probe with the documented 1 s
        # timeout fails, so a load balancer takes it out; thawed, it serves again.
        deployment.web_node_signal(signal.SIGSTOP)
        try:
            with pytest.raises(OSError):
                request(deployment.web[0].port, "GET", "/readyz", timeout=1)
            time.sleep(2)
        finally:
            deployment.web_node_signal(signal.SIGCONT)
        thawed = time.monotonic()
        figures.append(
            f"Web node frozen 3 s: probe timed out; payments again {load.first_200_after(thawed):.2f} s after"
        )
        assert load.first_200_after(thawed) <= BACK_WITHIN_SECONDS
        assert readiness(deployment)[0] == 200
    finally:
        load.stop()

    answers = Counter((status, code) for _, status, _, code in load.answers)
    report_figures("Fault test: answers", f"{dict(answers)}\n" + "\n".join(figures))
    # Never a 500 nor a broken connection; every 503 says when to retry.
    assert set(status for status, _ in answers) <= {200, 503, 409}, answers
    assert all(retry == "1" for _, status, retry, _ in load.answers if status == 503)
    assert not load.unfinished

    # Nothing lost or doubled: each key paid once, and only those.
    assert len(set(load.paid)) == len(load.paid)
    state = deployment.driver("state", json.dumps(deployment.ids))
    assert state["paymentRequests"] == len(load.paid)
    assert Decimal(state["balance"]) == Decimal("1000000.00") - len(load.paid)
    result = deployment.manage("check_ledger")
    assert result.returncode == 0 and "Ledger OK" in result.stdout, result.stdout + result.stderr

    # The operator's series moved, counted across the node's gunicorn workers.
    _, after = scrape(deployment)
    route = (("method", "POST"), ("route", "/v1/customers/{customerId}/accounts/{accountId}/payments"))

    def rise(name: str, labels: tuple) -> float:
        return after.get((name, labels), 0) - before.get((name, labels), 0)

    # A payment whose commit's answer was lost is counted by no request: the one
    # that made it failed after the commit, its retry was a replay.
    assert rise("bankapi_payments_total", (("outcome", "accepted"),)) == len(load.paid) - len(load.replayed)
    assert (
        rise("bankapi_http_requests_total", (*route, ("status", "503")))
        == answers[(503, "SERVICE_UNAVAILABLE")]
    )
    assert after[("bankapi_redis_up", ())] == 1
    # One outage line per kind and process, not a traceback per request.
    web_log = deployment.log("web1")
    found = web_log.find("Traceback")
    assert found < 0, web_log[max(found - 1500, 0) : found + 4000]
    assert web_log.count("Database unavailable") < 40, web_log.count("Database unavailable")
    # The worker's outbox relay polls five times a second: one line per outage, not per pass.
    relay_lines = deployment.log("worker1").count("outbox relay pass failed")
    assert relay_lines <= 6, relay_lines
    figures_logged = f"web log: {web_log.count('Database unavailable')} outage lines; relay: {relay_lines}"
    report_figures("Fault test: log lines", figures_logged)
    # Workers and beat follow the web's rule: an outage is a warning line, never a traceback.
    for name in ("worker1", "beat"):
        text = deployment.log(name)
        found = text.find("Traceback")
        assert found < 0, (name, text[max(found - 1500, 0) : found + 3000])
