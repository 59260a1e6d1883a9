"""The bench scripts run as their README says, at a tiny size: a script that no
test runs breaks without anyone noticing (bench/statements.py did, when the
payment instruction's payee became a `Payee`). Their figures are not checked
here (they are for bench/README.md); that each runs to the end and prints them is.
"""

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import requires_postgres, requires_redis

ROOT = Path(__file__).resolve().parents[2]


def run(script: str, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout


def without_databases() -> dict[str, str]:
    """This environment without the suite's database and broker: the embedded default."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }


def server_url() -> str:
    server = settings.DATABASES["default"]
    return f"postgres://{server['USER']}@{server['HOST'] or '127.0.0.1'}:{server['PORT'] or 5432}"


@pytest.fixture
def scratch_database():
    """A PostgreSQL database of its own on the suite's server, dropped afterwards."""
    import psycopg

    name = f"bench_smoke_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server_url()}/{name}"
    finally:
        with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'DROP DATABASE IF EXISTS "test_{name}" WITH (FORCE)')
            # pgbench's, made beside the bench's by bench/pipeline.py.
            admin.execute(f'DROP DATABASE IF EXISTS "{name}_pgbench" WITH (FORCE)')


@requires_postgres
def test_the_statements_bench_runs(scratch_database):
    out = run(
        "statements.py",
        "--postings",
        "300",
        "--runs",
        "1",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database},
    )

    assert "seeded 300 postings" in out
    for call in ("statement, a year (json) warm", "statement, a year (camt053) cold", "balance as of"):
        assert call in out, out


def test_the_scheduled_payments_bench_runs():
    out = run("scheduled_payments.py", "--schedules", "20", "--accounts", "5", env=without_databases())

    assert "Ran 20 schedules" in out, out


def test_the_clock_year_bench_runs():
    out = run("clock_year.py", "--customers", "2", "--days", "35", env=without_databases())

    assert "Advanced 35 days" in out and "schedule runs paid" in out, out


def test_the_card_authorizations_bench_runs():
    out = run(
        "card_authorizations.py",
        *("--requests", "8", "--customers", "2", "--clearings", "12", "--chunk", "5"),
        env=without_databases(),
    )

    assert "Cleared 12 authorizations" in out and "check_ledger: ok" in out, out
    assert out.strip().splitlines()[-1].startswith("ratio="), out


def test_the_iso20022_bench_runs():
    out = run("iso20022.py", "--transactions", "50", env=without_databases())

    assert "50 transactions" in out and "xmlschema" in out, out


def test_the_iso20022_memory_bench_runs():
    out = run("iso20022_memory.py", "--size-mib", "0.05", env=without_databases())

    assert "deep and wide" in out and "10000 payments" in out and "400 VALIDATION_ERROR" in out, out
    assert "240k attributed" in out and "60k attributes" in out and "200k namespaces" in out, out
    assert out.strip().splitlines()[-1].startswith("ratio="), out


def test_the_draft_get_bench_runs():
    out = run("draft_get.py", "--payments", "30", "--payers", "2", "--runs", "1", env=without_databases())

    assert "Draft of 30 payments (27 valid, 3 invalid)" in out, out
    for figure in ("ceiling", "dataclass path:", "presenter:", "GET:"):
        assert figure in out, out


@requires_redis
def test_the_batches_bench_runs(scratch_database):
    redis = os.environ["REDIS_URL"]
    out = run(
        "batches.py",
        "--items",
        "20",
        "--payers",
        "2",
        env=without_databases() | {"DATABASE_URL": scratch_database, "REDIS_URL": redis},
    )

    assert "processing of 20 items" in out and "ledger check: ok" in out, out


@requires_redis
def test_the_payment_cpu_bench_runs(scratch_database):
    out = run(
        "payment_cpu.py",
        "--payments",
        "10",
        "--warmup",
        "2",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database, "BENCH_REDIS_URL": redis_url()},
    )

    assert "per payment" in out, out


@requires_redis
def test_the_event_latency_bench_runs(scratch_database):
    out = run(
        "event_latency.py",
        "--payments",
        "10",
        "--rate",
        "20",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database, "BENCH_REDIS_URL": redis_url()},
    )

    assert "p99" in out, out


@requires_redis
def test_the_deliveries_bench_runs(scratch_database):
    out = run(
        "deliveries.py",
        "--payments",
        "10",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database, "BENCH_REDIS_URL": redis_url()},
    )

    assert "events/s" in out and "p99" in out, out


@requires_redis
@pytest.mark.skipif(
    shutil.which("wrk") is None or shutil.which("pgbench") is None, reason="needs wrk and pgbench"
)
def test_the_pipeline_bench_runs(scratch_database):
    out = run(
        "pipeline.py",
        "--door-seconds",
        "2",
        "--pgbench-seconds",
        "1",
        "--clients",
        "2",
        "--customers",
        "2",
        "--schedules",
        "10",
        "--minutes",
        "0.05",
        "--fractions",
        "0.3",
        "--sample-seconds",
        "1",
        "--drain-seconds",
        "120",
        "--deliveries-seconds",
        "120",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database, "BENCH_REDIS_URL": redis_url()},
    )

    for figure in (
        "door (gunicorn",
        "pgbench tpcb-like",
        "settlement alone:",
        "schedules alone:",
        "deliveries alone:",
    ):
        assert figure in out, out
    assert "f=0.3: intake" in out and "settlement lag max" in out and "p99=" in out, out
    assert "ledger invariant: holds" in out and "0 not settled" in out, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("pipeline=") and "settle=" in last and "CHECKS FAILED" not in last, out


def redis_url() -> str:
    """A Redis database of the suite's server that no other test uses (the event
    bench empties its database before and after)."""
    base = os.environ["REDIS_URL"].rsplit("/", 1)[0]
    return f"{base}/15"


@requires_postgres
def test_the_sign_in_flood_bench_runs(scratch_database):
    out = run(
        "sign_in_flood.py",
        "--duration",
        "1",
        "--payers",
        "1",
        "--flooders",
        "2",
        "--flood-rate",
        "4",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database},
    )

    assert "quiet" in out and "flood" in out, out


@requires_postgres
def test_the_sign_ins_under_flood_bench_runs(scratch_database):
    out = run(
        "sign_ins_under_flood.py",
        "--duration",
        "1",
        "--users",
        "1",
        "--sign-ins",
        "2",
        "--flooders",
        "2",
        "--flood-rate",
        "4",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database},
    )

    assert "quiet: real sign-ins" in out and "flood: real sign-ins" in out, out
    assert "success=" in out.splitlines()[-1] and "latency=" in out.splitlines()[-1], out


@requires_postgres
def test_the_sign_ins_at_once_bench_runs(scratch_database):
    out = run(
        "sign_ins_at_once.py",
        "--at-once",
        "2",
        "--rounds",
        "1",
        "--workers",
        "1",
        "--threads",
        "4",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database},
    )

    assert "one address: answers" in out and "many addresses: answers" in out, out
    assert out.splitlines()[-1].startswith("all_200="), out


@requires_postgres
def test_the_payments_bench_runs_its_in_process_steps(scratch_database):
    out = run(
        "payments_bench.py",
        "--in-process-only",
        "--customers",
        "1",
        env=without_databases() | {"BENCH_DATABASE_URL": scratch_database},
    )

    assert "statements per payment:" in out and "one payment in-process, one thread:" in out, out


BARE_CEILING_PAYS = """
import io, json, sys, tempfile, uuid
from decimal import Decimal
from pathlib import Path
sys.path.insert(0, "bench")
from serving import django_start, production_environment
django_start(production_environment(sys.argv[1], Path(tempfile.mkdtemp())))
from payments_seed import FUNDING, seed
(target,), _ = seed(1)
import bare_payments
from bankapi.models import Account, IdempotencyRecord
from events.models import Event
from payments.ledger import ledger_check
from payments.models import PaymentRequest
statuses = []
for _ in range(2):
    sent = {"amount": "1.25", "reference": "Bench", "beneficiaryId": target.beneficiary_id}
    body = json.dumps(sent).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": target.path, "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body), "HTTP_AUTHORIZATION": f"Bearer {target.token}",
        "HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4()),
    }
    bare_payments.application(environ, lambda status, headers: statuses.append(status))
account = Account.objects.get(id=target.account_id)
print(json.dumps({
    "statuses": statuses,
    "debited": str(FUNDING - account.balance),
    "requests": PaymentRequest.objects.filter(account=account, status="PENDING").count(),
    "events": Event.objects.count(),
    "keys": IdempotencyRecord.objects.filter(state="COMPLETED").count(),
    "ledger": ledger_check().ok,
}))
"""


@requires_postgres
def test_the_bare_ceiling_pays_what_the_route_pays(scratch_database):
    """bench/bare_payments.py, measured beside the route by bench/payments, writes
    a payment's rows: the debit, the PENDING request, its event and the key's
    record, with the ledger whole."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", BARE_CEILING_PAYS, scratch_database],
        cwd=ROOT,
        env=without_databases(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]

    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "statuses": ["200 OK", "200 OK"],
        "debited": "2.50",
        "requests": 2,
        "events": 2,
        "keys": 2,
        "ledger": True,
    }
