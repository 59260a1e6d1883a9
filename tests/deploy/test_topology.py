"""The deployment of deploy/, run as written on one machine.

From the files an operator installs (deploy/pgbouncer.ini, deploy/bankapi.env.example,
deploy/Procfile, deploy/gunicorn.conf.py) and docs/production.md's "Production deployment"
commands, changed only in ports, paths and the database's name: PgBouncer
(Debian's) in transaction pooling in front of PostgreSQL (database `<the test database>_deploytest`),
Redis db 11 (or DEPLOY_TEST_REDIS_DB), two gunicorn web nodes, two Celery workers, a webhooks worker and one
beat, all with production settings (BANKAPI_ENV=production, DEBUG off, secrets
generated here). Then the same processes straight to PostgreSQL, with what the
template says changes for that topology: prepared statements on.

It shows, through each topology:
- one Idempotency-Key sent 25 times to each web node at once pays once;
- prepared statements where the connection keeps them: the payment's statements
  prepared on direct connections, none through PgBouncer 1.18;
- a 1,000-item batch worked by both workers, one SIGKILLed midway, pays each item
  once (the survivor and the restarted worker finish it);
- one schedule day run by both workers at once pays each schedule once;
- `manage.py check_ledger` holds after all of it.
The batch and schedule stories run through PgBouncer only: what they prove (a
worker's death, a day run twice) does not depend on how connections reach
PostgreSQL.
"""

import configparser
import http.client
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import yaml
from celery import Celery
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings

from tests.conftest import requires_redis
from tests.deploy.conftest import refuse_unless_test_servers, report_figures
from tests.proof.processes import CeleryWorker, Gunicorn, free_port, request, shell_command

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
# The deployment's database, beside the test run's own on the same server (a test
# database: tests/deploy/conftest.py refuses any other): `<its name>_deploytest`.
DATABASE_SUFFIX = "_deploytest"
REDIS_DB = int(os.environ.get("DEPLOY_TEST_REDIS_DB", "11"))
PGBOUNCER = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
VENV_BIN = str(Path(sys.executable).parent)
# What the TLS-terminating proxy sends on: the client's Host (the public name of
# the environment template's ALLOWED_HOSTS) and the scheme it was reached by.
PUBLIC_HOST = "api.example.com"
HTTPS = {"X-Forwarded-Proto": "https", "Host": PUBLIC_HOST}

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    requires_redis,
    pytest.mark.skipif(PGBOUNCER is None, reason="needs PgBouncer: apt-get install pgbouncer"),
]


def readme_deployment_script() -> str:
    section = (
        (ROOT / "docs" / "production.md")
        .read_text()
        .split("## Production deployment", 1)[1]
        .split("\n## ", 1)[0]
    )
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def procfile() -> dict[str, str]:
    lines = (DEPLOY / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def env_template() -> dict[str, str]:
    lines = (DEPLOY / "bankapi.env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))


# The two topologies the deployment files name: through PgBouncer 1.18 in
# transaction pooling (the template's), or straight to PostgreSQL.
PGBOUNCER_TOPOLOGY, DIRECT_TOPOLOGY = "pgbouncer", "direct"


class Deployment:
    def __init__(self, folder: Path, topology: str = PGBOUNCER_TOPOLOGY):
        self.folder = folder
        self.topology = topology
        self.processes: list = []
        db = settings.DATABASES["default"]
        self.pg_host, self.pg_port = db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)
        self.pg_user, self.pg_password = db["USER"], db.get("PASSWORD") or ""
        redis = urlsplit(os.environ["REDIS_URL"])
        self.redis_url = f"redis://{redis.netloc}/{REDIS_DB}"
        self.bouncer_port = free_port()
        self.database_password = secrets.token_urlsafe(24)
        self.database = urlsplit(os.environ.get("DATABASE_URL", "")).path.lstrip("/") + DATABASE_SUFFIX

    # -- PostgreSQL, Redis and PgBouncer -------------------------------------------
    def admin_connection(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(
            host=self.pg_host,
            port=self.pg_port,
            user=self.pg_user,
            password=self.pg_password or None,
            dbname=dbname,
            autocommit=True,
        )

    def fresh_database_and_redis(self) -> None:
        with self.admin_connection() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{self.database}"')
        Celery(broker=self.redis_url).connection_for_write().default_channel.client.flushdb()

    def start_pgbouncer(self) -> None:
        ini = configparser.ConfigParser(delimiters=("=",), comment_prefixes=(";", "#"), interpolation=None)
        ini.optionxform = str  # keep names as written
        ini.read(DEPLOY / "pgbouncer.ini")
        (entry,) = ini["databases"].values()
        ini.remove_section("databases")
        ini["databases"] = {
            self.database: re.sub(
                r"host=\S+ port=\S+ dbname=\S+",
                f"host={self.pg_host} port={self.pg_port} dbname={self.database}",
                entry,
            )
        }
        userlist = self.folder / "userlist.txt"
        userlist.write_text(f'"{self.pg_user}" "{self.database_password}"\n')
        ini["pgbouncer"]["listen_port"] = str(self.bouncer_port)
        ini["pgbouncer"]["auth_file"] = str(userlist)
        if os.geteuid() == 0:
            # PgBouncer switches to the ini's user (it refuses to run as root).
            assert ini["pgbouncer"]["user"] == "postgres"
            shutil.chown(self.folder, "postgres")
            shutil.chown(userlist, "postgres")
        else:
            del ini["pgbouncer"]["user"]  # a user can only stay itself
        path = self.folder / "pgbouncer.ini"
        with path.open("w") as file:
            ini.write(file)
        log = (self.folder / "pgbouncer.log").open("ab")
        process = subprocess.Popen([PGBOUNCER, str(path)], stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
        self.processes.append(process)
        deadline = time.monotonic() + 20
        while True:
            try:
                psycopg.connect(self.database_url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError((self.folder / "pgbouncer.log").read_text()) from None
                time.sleep(0.2)

    def database_url(self) -> str:
        if self.topology == DIRECT_TOPOLOGY:
            password = f":{self.pg_password}" if self.pg_password else ""
            return f"postgres://{self.pg_user}{password}@{self.pg_host}:{self.pg_port}/{self.database}"
        return f"postgres://{self.pg_user}:{self.database_password}@127.0.0.1:{self.bouncer_port}/{self.database}"

    # -- The environment file, filled in --------------------------------------------
    def environment_file(self) -> Path:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwt = self.folder / "jwt.pem"
        jwt.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        jwt.chmod(0o600)
        values = env_template()
        filled = {
            "DATABASE_URL": self.database_url(),
            "REDIS_URL": self.redis_url,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
            "METRICS_TOKEN": secrets.token_urlsafe(32),
            "JWT_PRIVATE_KEY_FILE": str(jwt),
            "STATIC_ROOT": str(self.folder / "static"),
            "BANKAPI_VAR_DIR": str(self.folder / "var"),
            "PROMETHEUS_MULTIPROC_DIR": str(self.folder / "var" / "metrics"),
            # One task at a time per worker: two tasks sent at once go to both workers.
            "CELERY_CONCURRENCY": "1",
        }
        assert filled.keys() <= values.keys(), "the template must name every setting a deployment fills in"
        # The template's topology is PgBouncer 1.18's: no prepared statements. Straight
        # to PostgreSQL, the template's comment says to turn them on.
        assert values["DATABASE_PREPARED_STATEMENTS"] == "false"
        if self.topology == DIRECT_TOPOLOGY:
            filled["DATABASE_PREPARED_STATEMENTS"] = "true"
        assert values["BANKAPI_ENV"] == "production"
        assert values["ALLOWED_HOSTS"] == PUBLIC_HOST  # the template's, as an operator leaves it
        values.update(filled)
        path = self.folder / "bankapi.env"
        path.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
        path.chmod(0o600)
        self.env = {**self.base_environment(), **values}
        return path

    @staticmethod
    def base_environment() -> dict[str, str]:
        """The machine's environment without the test run's own choices."""
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in {"DATABASE_URL", "REDIS_URL", "BANKAPI_ENV", "DJANGO_SETTINGS_MODULE"}
            and not name.startswith(("CELERY_", "PYTEST"))
        }
        env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
        env["PYTHONUNBUFFERED"] = "1"
        return env

    # -- The processes of the Procfile ------------------------------------------------
    def start_processes(self) -> None:
        commands = procfile()
        assert set(commands) == {"web", "worker", "webhooks", "beat"}
        self.web = [
            Gunicorn(self.env, 2, self.folder / f"web{n}.log", command=shell_command(commands["web"]))
            for n in (1, 2)
        ]
        self.processes += self.web
        self.workers = [
            CeleryWorker(
                {**self.env, "CELERY_NODE_NAME": f"worker{n}"},
                self.folder / f"worker{n}.log",
                command=shell_command(commands["worker"]),
            )
            for n in (1, 2)
        ]
        self.processes += self.workers
        self.webhooks = CeleryWorker(
            {**self.env, "CELERY_NODE_NAME": "worker1"},
            self.folder / "webhooks.log",
            command=shell_command(commands["webhooks"]),
        )
        self.processes.append(self.webhooks)
        self.beat = CeleryWorker(self.env, self.folder / "beat.log", command=shell_command(commands["beat"]))
        self.processes.append(self.beat)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if isinstance(process, subprocess.Popen):
                process.terminate()
                process.wait(timeout=10)
            else:
                process.stop()

    # -- Talking to it ----------------------------------------------------------------
    def manage(self, *arguments: str) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", *arguments],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    def driver(self, *arguments: str) -> dict:
        result = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "tests.deploy.driver", *arguments],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def sql(self, query: str, *parameters) -> tuple:
        with self.admin_connection(self.database) as connection:
            return connection.execute(query, parameters).fetchone()

    def send_task(self, name: str, *args) -> str:
        """Send the task by name, as beat does; its task id."""
        return Celery(broker=self.redis_url).send_task(name, args=list(args), queue="celery").id

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")


def wait_for(predicate, timeout: float, what: str, step: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(step)


@pytest.fixture(scope="module", params=[PGBOUNCER_TOPOLOGY, DIRECT_TOPOLOGY])
def deployment(request):
    refuse_unless_test_servers()
    folder = Path(tempfile.mkdtemp(prefix="bankapi-deploy-"))
    os.chmod(folder, 0o750)
    deployment = Deployment(folder, request.param)
    started = time.monotonic()
    try:
        deployment.fresh_database_and_redis()
        if deployment.topology == PGBOUNCER_TOPOLOGY:
            deployment.start_pgbouncer()
        env_file = deployment.environment_file()
        # The README's commands, as written, with this environment file.
        script = readme_deployment_script().replace("/etc/bankapi/bankapi.env", str(env_file))
        result = subprocess.run(  # noqa: S603
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=ROOT, env=deployment.base_environment(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert (folder / "static" / "admin").is_dir(), "collectstatic wrote nothing where STATIC_ROOT says"
        deployment.start_processes()
        deployment.ids = deployment.driver("setup")
        report_figures(
            f"Deployment test ({deployment.topology})", f"topology up in {time.monotonic() - started:.1f} s"
        )
        yield deployment
    finally:
        deployment.stop()
        shutil.rmtree(folder, ignore_errors=True)


def test_the_production_guide_lists_the_procfile_commands(deployment):
    section = (
        (ROOT / "docs" / "production.md")
        .read_text()
        .split("## Production deployment", 1)[1]
        .split("\n## ", 1)[0]
    )
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", section, re.S | re.M)
    listed = [body for language, body in blocks if not language]
    assert [line for block in listed for line in block.splitlines()] == list(procfile().values())


def test_processes_run_with_production_settings(deployment):
    public = {"Host": PUBLIC_HOST}
    status, headers, _ = request(deployment.web[0].port, "GET", "/v1/programs", headers=public)
    assert status == 301 and headers["Location"].startswith("https://"), "plain HTTP must be redirected"
    for web in deployment.web:
        # A load balancer probes each node by its address, over plain HTTP.
        for probe in ("/healthz", "/readyz"):
            status, _, body = request(web.port, "GET", probe)
            assert status == 200, (probe, body)
        # Any other route refuses a Host that ALLOWED_HOSTS does not name.
        status, _, body = request(web.port, "GET", "/v1/programs", headers={"X-Forwarded-Proto": "https"})
        assert status == 400, body
        # DEBUG off: an unknown route answers the service's 404, never Django's debug page.
        status, _, body = request(web.port, "GET", "/v1/no-such-route", headers=HTTPS)
        assert status == 404 and "Traceback" not in json.dumps(body)
    for name in ("worker1", "worker2"):
        wait_for(lambda name=name: "ready." in deployment.log(name), 60, f"{name} ready")
    wait_for(lambda: "beat: Starting" in deployment.log("beat"), 60, "beat started")


def test_one_idempotency_key_sent_to_both_nodes_pays_once(deployment):
    ids = deployment.ids
    path = f"/v1/customers/{ids['customerId']}/accounts/{ids['accountId']}/payments"
    payee = {"name": "Jane", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}
    body = {"amount": "12.34", "reference": "Deploy test", "payee": payee}
    headers = {**HTTPS, "Authorization": f"Bearer {ids['token']}", "Idempotency-Key": str(uuid.uuid4())}
    answers: list[tuple[int, str | None, str | None]] = []
    start = threading.Barrier(50)

    def send(port: int) -> None:
        start.wait()
        while True:
            status, response_headers, answer = request(port, "POST", path, body, headers)
            if status == 409 and answer.get("code") == "IDEMPOTENCY_KEY_IN_PROGRESS":
                answers.append((409, None, None))
                time.sleep(0.1)
                continue
            request_id = answer["data"]["bankTransfer"]["requestId"] if status == 200 else json.dumps(answer)
            answers.append((status, request_id, response_headers.get("Idempotent-Replayed")))
            return

    threads = [threading.Thread(target=send, args=(web.port,)) for web in deployment.web for _ in range(25)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    final = [answer for answer in answers if answer[0] != 409]
    assert len(final) == 50
    assert {status for status, _, _ in final} == {200}, final
    assert len({request_id for _, request_id, _ in final}) == 1
    assert Counter(replayed for _, _, replayed in final) == {"true": 49, None: 1}
    state = deployment.driver("state", json.dumps(ids))
    assert state["paymentRequests"] == 1
    assert Decimal(state["balance"]) == Decimal("1000000.00") - Decimal("12.34")
    report_figures(
        f"Deployment ({deployment.topology}): one key, 25 times to each node at once",
        f"answers: {dict(Counter(status for status, _, _ in answers))}; payments made: 1",
    )


def through_pgbouncer_only(deployment) -> None:
    if deployment.topology != PGBOUNCER_TOPOLOGY:
        pytest.skip("the workers' recovery does not depend on the topology: shown through PgBouncer")


def test_prepared_statements_where_the_connection_keeps_them(deployment):
    found = deployment.driver("prepared", json.dumps(deployment.ids))

    assert found["statuses"] == [200] * 6
    if deployment.topology == DIRECT_TOPOLOGY:
        assert found["setting"] is True
        # The payment's write (one statement) and the caller's read, prepared.
        assert any(statement.startswith('WITH "debit" AS') for statement in found["prepared"]), found
        assert any('FROM "authn_user"' in statement for statement in found["prepared"]), found
    else:
        assert found["setting"] is False
        assert found["prepared"] == []
    report_figures(
        f"Deployment ({deployment.topology}): prepared statements",
        f"DATABASE_PREPARED_STATEMENTS={found['setting']}; {len(found['prepared'])} statement(s) prepared",
    )


def test_a_batch_survives_a_worker_killed_midway(deployment):
    through_pgbouncer_only(deployment)
    ids = deployment.ids
    batch_id = deployment.driver("batch", "1000")["batchId"]
    # The submit queued one run; a second one (what the stalled-batch sweep sends)
    # puts the other worker on the same batch.
    deployment.send_task("batches.tasks.process_batch", batch_id)
    paid = "SELECT count(*) FROM batches_batchitem WHERE batch_id = %s AND status = 'SUCCESS'"
    wait_for(lambda: deployment.sql(paid, batch_id)[0] >= 100, 120, "the workers start paying")
    deployment.workers[0].kill()
    killed_at = deployment.sql(paid, batch_id)[0]
    assert killed_at < 1000, "the batch finished before a worker was killed"
    deployment.workers[0].start()
    deployment.send_task("batches.tasks.resume_stalled_batches", 0)
    final = "SELECT status FROM batches_batch WHERE id = %s"
    wait_for(
        lambda: deployment.sql(final, batch_id)[0] in {"COMPLETED", "PARTIALLY_FAILED", "FAILED"},
        240,
        "the batch finishes",
        step=1,
    )

    state = deployment.driver("state", json.dumps({**ids, "batchId": batch_id}))
    assert state["batch"] == {
        "status": "COMPLETED",
        "success": 1000,
        "payments": 1000,
        "distinctPayments": 1000,
    }
    # 100 items of 1.00 per payer, each paid once.
    assert state["payerBalances"] == ["999900.00"] * 10
    for name in ("worker1", "worker2"):
        assert "batches.tasks.process_batch" in deployment.log(name), f"{name} never worked the batch"
    report_figures(
        "Deployment: 1,000-item batch", f"worker1 SIGKILLed with {killed_at} items paid; all 1000 paid once"
    )


def test_a_batch_whose_worker_was_killed_is_taken_up_by_the_other_within_90_seconds(deployment):
    """No sweep sent by hand: beat's own (every minute) finds the batch silent
    and the surviving worker finishes it, within 90 s of the kill."""
    through_pgbouncer_only(deployment)
    runs = "batches.tasks.process_batch"
    received = {
        worker: deployment.log(f"worker{n}").count(runs) for n, worker in enumerate(deployment.workers, 1)
    }
    batch_id = deployment.driver("batch", "1000")["batchId"]
    paid = "SELECT count(*) FROM batches_batchitem WHERE batch_id = %s AND status = 'SUCCESS'"
    wait_for(lambda: deployment.sql(paid, batch_id)[0] >= 1, 120, "a worker starts paying")
    (runner,) = [
        worker
        for n, worker in enumerate(deployment.workers, 1)
        if deployment.log(f"worker{n}").count(runs) > received[worker]
    ]
    runner.kill()
    killed = time.monotonic()
    paid_at_kill = deployment.sql(paid, batch_id)[0]
    assert paid_at_kill < 1000, "the batch finished before its worker was killed"
    final = "SELECT status FROM batches_batch WHERE id = %s"
    try:
        wait_for(
            lambda: deployment.sql(final, batch_id)[0] in {"COMPLETED", "PARTIALLY_FAILED", "FAILED"},
            90,
            "the batch is taken up and finished within 90 s of its worker's death",
            step=1,
        )
        took = time.monotonic() - killed
    finally:
        runner.start()

    state = deployment.driver("state", json.dumps({**deployment.ids, "batchId": batch_id}))
    assert state["batch"] == {
        "status": "COMPLETED",
        "success": 1000,
        "payments": 1000,
        "distinctPayments": 1000,
    }
    report_figures(
        "Deployment: a batch's only worker killed",
        f"{paid_at_kill} of 1000 paid at the kill; finished by the other worker {took:.0f} s after it",
    )


def test_a_schedule_day_sent_to_both_workers_pays_each_schedule_once(deployment):
    through_pgbouncer_only(deployment)
    ids = deployment.ids
    # Beat sends the same task every 20 s as well: only the test's two are counted.
    sent = [deployment.send_task("payments.tasks.run_scheduled_payments", ids["today"]) for _ in range(2)]

    def runs_done(name: str) -> int:
        found = re.findall(
            r"Task payments\.tasks\.run_scheduled_payments\[(\S+)\] succeeded", deployment.log(name)
        )
        return sum(1 for task_id in found if task_id in sent)

    wait_for(
        lambda: runs_done("worker1") + runs_done("worker2") == 2, 120, "both runs of the day end", step=0.5
    )
    # Beat-started runs hold the entry's lease: whichever worker takes the second
    # while the first runs does nothing, so both may land on one worker.

    state = deployment.driver("state", json.dumps(ids))
    assert set(state["schedulePayments"].values()) == {1}
    assert state["scheduleRuns"] == len(ids["scheduleIds"]) == 200
    assert state["schedulesAdvanced"] == 200
    # Each payer: 100 items of each of the two batches and 20 standing orders of 1.00.
    assert state["payerBalances"] == ["999780.00"] * 10


def test_prometheus_scrapes_each_web_node_as_configured(deployment):
    from django.urls import Resolver404, resolve

    try:
        resolve("/metrics")
    except Resolver404:
        pytest.skip("the service has no /metrics route yet")
    (job,) = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())["scrape_configs"]
    assert job["authorization"]["type"] == "Bearer"
    headers = {name: spec["values"][0] for name, spec in job.get("http_headers", {}).items()}
    headers["Authorization"] = f"Bearer {deployment.env['METRICS_TOKEN']}"
    for web in deployment.web:
        connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=15)
        connection.request("GET", job["metrics_path"], headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        connection.close()
        assert response.status == 200, text[:500]
        assert "bankapi_http_requests_total" in text


def test_the_ledger_holds_after_all_of_it(deployment):
    # Every process of the topology still runs (the killed worker restarted), and
    # beat has been sending its periodic tasks (its schedule file where BANKAPI_VAR_DIR says).
    wait_for(lambda: "Scheduler: Sending due task" in deployment.log("beat"), 60, "beat sends a task")
    for process in (*deployment.web, *deployment.workers, deployment.beat):
        assert process.process.poll() is None, process.log.name
    # Workers killed and restarted, batches taken over: no traceback in any process.
    for name in ("web1", "web2", "worker1", "worker2", "beat"):
        text = deployment.log(name)
        found = text.find("Traceback")
        assert found < 0, f"{name}:\n{text[max(found - 1500, 0) : found + 3000]}"
    result = deployment.manage("check_ledger")
    assert result.returncode == 0, result.stderr
    assert "Ledger OK" in result.stdout
