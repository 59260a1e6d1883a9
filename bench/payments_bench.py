"""The payments bench: `make bench`, or bench/payments [options].

Serves the API as an operator would deploy it (gunicorn, threaded workers, production
settings, DEBUG off, PostgreSQL on loopback, a free port), seeds customers with
funded accounts through the ORM and the ledger service, and drives
`POST /v1/customers/{customerId}/accounts/{accountId}/payments` from wrk with a
unique Idempotency-Key per request:

- spread: every request from a random one of the accounts;
- hot: every request from one account; its final balance is checked to the cent
  and every answer must be a 2xx (the account holds funds for far more payments);
- half rate: spread again, each connection paced to about half the spread rate,
  for the latency an operator sees below saturation;
- full day: the hot mode on an account that already has 100,000 payments today.

In the same run pgbench (built-in tpcb-like, same clients, same duration) measures
PostgreSQL's own ceiling on a second database. Also measured, in this process with
Django's test client: statements per payment (every message the driver sends to
PostgreSQL, transaction control included) and the time of one payment in one
thread. Prints `ratio=` (payments/s over pgbench TPS) as its last line.

THE BENCH DATABASE IS WIPED (every table truncated) at the start of each run. It
is BENCH_DATABASE_URL, else DATABASE_URL; pgbench uses `<that database>_pgbench`
(or BENCH_PGBENCH_DB), on the same server, which must exist.
"""

import argparse
import json
import os
import runpy
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

from baseline import UNLIMITED_BUDGETS, database_ensure, pgbench_database_url

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "bench" / "payments.lua"
AMOUNT = Decimal("1.00")
FUNDING = Decimal("1000000.00")
DAY_PAYMENTS_DEFAULT = 100_000


def fail(message: str) -> None:
    print(f"bench/payments: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_tools() -> None:
    if shutil.which("wrk") is None:
        fail("wrk is not installed. On Debian or Ubuntu: apt-get update && apt-get install -y wrk")
    if shutil.which("pgbench") is None:
        fail("pgbench is not installed. On Debian or Ubuntu: apt-get install -y postgresql-contrib")
    if not (ROOT / ".venv" / "bin" / "gunicorn").exists():
        fail("gunicorn is missing from .venv: run 'make install'")


def check_server(server: str) -> None:
    if not (ROOT / ".venv" / "bin" / server).exists():
        fail(f"{server} is missing from .venv: run 'make install' (granian: pip install granian)")


def production_environment(database_url: str, work_dir: Path) -> dict[str, str]:
    """The production settings the service needs, with throwaway secrets made now
    (never written anywhere but this run's temporary folder)."""
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    static_root = work_dir / "static"
    static_root.mkdir()
    return {
        "BANKAPI_ENV": "production",
        "DJANGO_DEBUG": "false",
        # Plain HTTP on the loopback, no TLS proxy in front: no redirect to https.
        "SECURE_SSL_REDIRECT": "false",
        "DATABASE_URL": database_url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "JWT_PRIVATE_KEY": pem,
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        # Clients reach gunicorn directly, no proxy in front.
        "TRUSTED_PROXY_COUNT": "0",
        "BANKAPI_VAR_DIR": str(work_dir / "var"),
        "STATIC_ROOT": str(static_root),
        "LOG_LEVEL": "WARNING",
        **UNLIMITED_BUDGETS,
    }


@dataclass
class Target:
    customer_id: str
    account_id: str
    beneficiary_id: str
    token: str

    @property
    def path(self) -> str:
        return f"/v1/customers/{self.customer_id}/accounts/{self.account_id}/payments"

    def line(self) -> str:
        return f"{self.path} {self.token} {self.beneficiary_id}"


def seed(customers: int) -> tuple[list[Target], dict[str, Target]]:
    """`customers` spread customers plus one each for the hot, in-process and
    full-day runs, each with a funded GBP account, a beneficiary and a token."""
    from authn.models import User
    from authn.tokens import ACCESS, encode_token
    from bankapi.models import Account, Customer, Program
    from bankapi.roles import Role
    from payments.ledger import ledger_fund_account
    from payments.models import Beneficiary

    program = Program.objects.create(name="Bench program", account_type=Program.AccountType.CONSUMER)

    def make(name: str) -> Target:
        customer = Customer.objects.create(program=program, sandbox=False, name=name)
        user = User(
            email=f"{name.lower().replace(' ', '-')}@bench.example",
            program=program,
            sandbox=False,
            role=Role.CUSTOMER,
            customer=customer,
        )
        user.set_unusable_password()
        user.save()
        account = Account.objects.create(
            program=program, sandbox=False, customer=customer, name=name, currency="GBP"
        )
        ledger_fund_account(account, FUNDING, key=f"bench-funding:{account.id}")
        beneficiary = Beneficiary.objects.create(
            program=program,
            sandbox=False,
            customer=customer,
            name=f"{name} payee",
            account_kind=Beneficiary.AccountKind.UK,
            sort_code="200000",
            account_number=f"{secrets.randbelow(10**8):08d}",
        )
        return Target(
            customer_id=str(customer.id),
            account_id=str(account.id),
            beneficiary_id=str(beneficiary.id),
            token=encode_token(user, ACCESS),
        )

    spread = [make(f"Spread {n}") for n in range(customers)]
    special = {name: make(f"Bench {name}") for name in ("hot", "inprocess", "fullday")}
    return spread, special


def seed_day_of_payments(target: Target, count: int) -> None:
    """`count` accepted payments of AMOUNT today on the target's account: one made
    by the acceptance service, then copied in bulk with everything acceptance
    writes (its ledger movement and postings, the PENDING request, the balance
    and the day's usage), so the copies follow whatever the schema holds."""
    from django.db import connection, transaction
    from django.db.models import BigAutoField, F

    from bankapi.models import Account
    from payments.models import (
        Beneficiary,
        LedgerPosting,
        LedgerTransaction,
        PaymentRequest,
    )
    from payments.services.acceptance import PaymentInstruction, payment_accept

    account = Account.objects.get(id=target.account_id)
    beneficiary = Beneficiary.objects.get(id=target.beneficiary_id)
    template = payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=AMOUNT,
            currency=account.currency,
            reference="Bench",
            beneficiary=beneficiary,
            payee=beneficiary.payee(),
        ),
    )
    copies = count - 1
    name = connection.ops.quote_name

    def copy_sql(model, source: str, where: str, replace: dict[str, str]) -> str:
        columns = [
            field.column for field in model._meta.concrete_fields if not isinstance(field, BigAutoField)
        ]
        chosen = [replace.get(column, f"{source}.{name(column)}") for column in columns]
        # In copy order, so the postings' ids follow their running balances.
        return (
            f"INSERT INTO {name(model._meta.db_table)} ({', '.join(map(name, columns))}) "
            f"SELECT {', '.join(chosen)} FROM {name(model._meta.db_table)} {source}, bench_day WHERE {where} "
            "ORDER BY bench_day.n"
        )

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE bench_day ON COMMIT DROP AS SELECT gen_random_uuid() AS tx_id, "
            "gen_random_uuid() AS request_id, n FROM generate_series(1, %s) AS n",
            [copies],
        )
        cursor.execute(
            copy_sql(LedgerTransaction, "t", "t.id = %s", {"id": "bench_day.tx_id"}), [template.acceptance_id]
        )
        # The n-th copy leaves the account's balance n debits below the template's
        # (null stays null on system accounts).
        cursor.execute(
            copy_sql(
                LedgerPosting,
                "p",
                "p.transaction_id = %s",
                {
                    "transaction_id": "bench_day.tx_id",
                    "balance_after": "p.balance_after + bench_day.n * p.amount",
                    # Each copy's customer posting names its own request.
                    "request_id": "CASE WHEN p.request_id IS NOT NULL THEN bench_day.request_id END",
                },
            ),
            [template.acceptance_id],
        )
        cursor.execute(
            copy_sql(
                PaymentRequest,
                "r",
                "r.id = %s",
                {"id": "bench_day.request_id", "acceptance_id": "bench_day.tx_id"},
            ),
            [template.id],
        )
        moved = copies * AMOUNT
        Account.objects.filter(id=account.id).update(
            balance=F("balance") - moved, outbound_total=F("outbound_total") + moved
        )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {name(PaymentRequest._meta.db_table)}")


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def machine() -> str:
    from django.db import connection

    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    return f"{os.cpu_count()} x {model}, PostgreSQL {version}, load average {os.getloadavg()[0]:.1f}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deployed_threads() -> int:
    """Requests one web process serves at a time as deployed: the `threads` of
    deploy/gunicorn.conf.py (with more than one, gunicorn runs its threaded
    worker, gthread, whatever worker class is asked for)."""
    return int(runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))["threads"])


def server_command(server: str, port: int, workers: int) -> list[str]:
    """The command serving `bankapi.wsgi` on the port: gunicorn with the deployed
    configuration (threaded workers), or granian's WSGI interface with as many
    blocking threads per worker as gunicorn's threads, so that both serve the
    same number of requests at a time per process."""
    if server == "granian":
        return [
            str(ROOT / ".venv" / "bin" / "granian"),
            "--interface=wsgi",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--workers={workers}",
            f"--blocking-threads={deployed_threads()}",
            "--no-ws",
            "--log-level=warning",
            "bankapi.wsgi:application",
        ]
    return [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "bankapi.wsgi:application",
        f"--config={ROOT / 'deploy' / 'gunicorn.conf.py'}",
        f"--workers={workers}",
        f"--bind=127.0.0.1:{port}",
        "--log-level=warning",
        "--timeout=60",
    ]


def start_server(env: dict[str, str], workers: int, server: str = "gunicorn") -> tuple[subprocess.Popen, str]:
    for _ in range(5):
        port = free_port()
        process = subprocess.Popen(server_command(server, port, workers), cwd=ROOT, env={**os.environ, **env})
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:  # noqa: S310
                    if answer.status == 200:
                        return process, base
            except OSError:
                time.sleep(0.2)
        process.terminate()
        process.wait()
    fail(f"{server} did not start")


@dataclass
class WrkResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    non2xx: int
    socket_errors: int
    sample: str

    @property
    def ok_per_second(self) -> float:
        return (self.requests - self.non2xx) / self.seconds

    def describe(self) -> str:
        return (
            f"payments/s={self.ok_per_second:.1f} p50={self.p50_ms:.1f}ms p99={self.p99_ms:.1f}ms "
            f"answers={self.requests} non-2xx={self.non2xx} socket-errors={self.socket_errors}"
        )


def run_wrk(base: str, targets: list[Target], work_dir: Path, *, clients: int, seconds: int, delay_ms=0):
    targets_file = work_dir / f"targets-{uuid.uuid4().hex}.txt"
    targets_file.write_text("".join(target.line() + "\n" for target in targets))
    run_tag = secrets.token_hex(4)
    command = [
        "wrk",
        f"--threads={min(2, clients)}",
        f"--connections={clients}",
        f"--duration={seconds}s",
        "--timeout=10s",
        f"--script={LUA}",
        base,
        "--",
        str(targets_file),
        run_tag,
        str(delay_ms),
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next((row for row in output.splitlines() if row.startswith("BENCH ")), None)
    if line is None:
        fail(f"wrk printed no result:\n{output}")
    data = json.loads(line[len("BENCH ") :])
    sample = next((row[len("SAMPLE ") :] for row in output.splitlines() if row.startswith("SAMPLE ")), "")
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        non2xx=data["non2xx"],
        socket_errors=data["socket_errors"] + data["timeouts"],
        sample=sample,
    )


def run_pgbench(database_url: str, *, clients: int, seconds: int) -> float:
    url = pgbench_database_url(database_url)
    database_ensure(url)
    scale = max(clients, 1)
    check = subprocess.run(
        ["psql", url, "-Atc", "SELECT count(*) FROM pgbench_branches"], capture_output=True, text=True
    )
    if check.returncode != 0 or check.stdout.strip() != str(scale):
        subprocess.run(["pgbench", "-i", "-q", f"--scale={scale}", url], capture_output=True, check=True)
    result = subprocess.run(
        ["pgbench", f"--client={clients}", f"--jobs={min(2, clients)}", f"--time={seconds}", url],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in result.stdout.splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    fail(f"pgbench printed no tps:\n{result.stdout}")


class StatementTrace:
    """Counts the statements a block sends to PostgreSQL: every Query (or Parse)
    message in libpq's protocol trace, so BEGIN, COMMIT and SAVEPOINT count too,
    and so do statements sent on a connection opened inside the block."""

    def __enter__(self):
        from django.db import connection
        from django.db.backends.signals import connection_created

        self.file = tempfile.TemporaryFile()
        self.traced = []
        connection_created.connect(self._created)
        if connection.connection is not None:
            self._attach(connection.connection)
        return self

    def _created(self, sender, connection, **kwargs) -> None:
        self._attach(connection.connection)

    def _attach(self, raw) -> None:
        raw.pgconn.trace(self.file.fileno())
        self.traced.append(raw)

    def __exit__(self, *exc) -> None:
        from django.db.backends.signals import connection_created

        connection_created.disconnect(self._created)
        for raw in self.traced:
            if not raw.closed:
                raw.pgconn.untrace()

    def statements(self) -> list[str]:
        self.file.seek(0)
        sent = []
        for row in self.file.read().decode(errors="replace").splitlines():
            fields = row.split("\t")
            if len(fields) > 4 and fields[1] == "F" and fields[3] in ("Query", "Parse"):
                sent.append(fields[4].strip())
        return sent


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def django_start(env: dict[str, str]) -> None:
    """Django set up in this process with the bench's environment (`env`, on
    production settings), its database migrated and emptied."""
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bankapi.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("flush", verbosity=0, interactive=False)


def in_process_payer(target: Target) -> Callable[[], None]:
    """One payment of AMOUNT from the target's account through Django's test
    client in this thread, a new Idempotency-Key each; any answer but 200 fails
    the bench."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {target.token}")
    body = {"amount": str(AMOUNT), "reference": "Bench", "beneficiaryId": target.beneficiary_id}

    def pay() -> None:
        answer = client.post(
            target.path, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())
        )
        if answer.status_code != 200:
            fail(f"in-process payment answered {answer.status_code}: {answer.content[:300]!r}")

    return pay


def in_process(target: Target, payments: int) -> tuple[float, list[str]]:
    """Median time of one payment through Django's test client in this thread,
    and the statements of one payment."""
    pay = in_process_payer(target)
    for _ in range(20):
        pay()
    with StatementTrace() as trace:
        pay()
    timings = []
    for _ in range(payments):
        started = time.perf_counter()
        pay()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000, trace.statements()


def check_hot_account(target: Target, result: WrkResult, clients: int, before: Decimal) -> str:
    """The hot account's balance to the cent, against the payments it accepted."""
    from bankapi.models import Account
    from payments.models import PaymentRequest

    time.sleep(1)  # answers wrk stopped waiting for are finished by then
    accepted = PaymentRequest.objects.filter(account_id=target.account_id).count()
    balance = Account.objects.get(id=target.account_id).balance
    answered_ok = result.requests - result.non2xx
    problems = []
    if balance != before - accepted * AMOUNT:
        problems.append(f"balance {balance} != {before} - {accepted} x {AMOUNT}")
    if not answered_ok <= accepted <= answered_ok + clients:
        problems.append(f"{accepted} payments accepted but {answered_ok} answered 2xx")
    if result.non2xx:
        problems.append(f"{result.non2xx} non-2xx answers (first: {result.sample[:300]})")
    if problems:
        print("HOT ACCOUNT CHECK FAILED: " + "; ".join(problems))
        return "FAILED"
    return f"exact (balance {balance} = {before} - {accepted} x {AMOUNT}; non-2xx 0)"


def in_process_report(
    statements: list[str], control: int, single_ms: float, count: int, max_age: object
) -> None:
    print(
        f"statements per payment: {len(statements)} ({len(statements) - control} besides "
        f"transaction control), in-process, CONN_MAX_AGE={max_age}"
    )
    if os.environ.get("BENCH_SHOW_STATEMENTS"):
        for sql in statements:
            print(f"    {sql[:160]}")
    print(f"one payment in-process, one thread: {single_ms:.1f} ms (median of {count})")
    print(f"load average now {os.getloadavg()[0]:.1f}")


def shared_arguments(args: argparse.Namespace) -> list[str]:
    """The options a baseline run gets too: what both runs measure must be the same."""
    shared = [
        f"--duration={args.duration}",
        f"--clients={args.clients}",
        f"--workers={args.workers}",
        f"--customers={args.customers}",
        f"--day-payments={args.day_payments}",
        f"--in-process={args.in_process}",
    ]
    return shared + (["--in-process-only"] if args.in_process_only else [])


def current_arguments(args: argparse.Namespace) -> list[str]:
    """Options only this checkout's bench knows (the baseline serves with gunicorn)."""
    return [f"--server={args.server}"] if args.server != "gunicorn" else []


def baseline_main(args: argparse.Namespace) -> int:
    from baseline import BaselineError, baseline_compare

    if not args.in_process_only:
        check_tools()
    try:
        return baseline_compare(
            args.baseline, shared_arguments(args), current_arguments(args), rounds=args.rounds
        )
    except BaselineError as error:
        fail(str(error))
        return 2


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=15, help="seconds per wrk and pgbench run (15)")
    parser.add_argument("--clients", type=int, default=8, help="wrk connections and pgbench clients (8)")
    parser.add_argument("--workers", type=int, default=4, help="server worker processes (4)")
    parser.add_argument("--customers", type=int, default=100, help="customers of the spread run (100)")
    parser.add_argument(
        "--day-payments", type=int, default=DAY_PAYMENTS_DEFAULT, help="payments today in the full-day run"
    )
    parser.add_argument("--in-process", type=int, default=200, help="payments timed in-process (200)")
    parser.add_argument(
        "--in-process-only",
        action="store_true",
        help="only the in-process figures (statements, one payment in one thread): no wrk, no pgbench",
    )
    parser.add_argument(
        "--server",
        choices=["gunicorn", "granian"],
        default="gunicorn",
        help="the HTTP server: gunicorn as deploy/gunicorn.conf.py configures it, "
        "or granian's WSGI with as many threads per worker (gunicorn)",
    )
    parser.add_argument(
        "--baseline",
        metavar="COMMIT",
        help="run the bench on COMMIT (a temporary git worktree) and then on this checkout, "
        "back to back, and print both and their ratio",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="with --baseline: this many pairs, every other one with this checkout first, "
        "then each figure's median (1)",
    )
    args = parser.parse_args(argv)
    if args.baseline:
        raise SystemExit(baseline_main(args))

    if not args.in_process_only:
        check_tools()
        check_server(args.server)
    database_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL database the bench may wipe")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-payments-"))
    env = production_environment(database_url, work_dir)
    redis_url = os.environ.get("BENCH_REDIS_URL")
    if redis_url:
        # As deployed: Redis is the broker. A payment publishes nothing to it (its
        # event waits in the outbox for a worker's relay); no worker runs during
        # the bench, so the events stay there. The bench's Redis database is
        # emptied before and after.
        env["REDIS_URL"] = redis_url
        flush_redis(redis_url)
    else:
        os.environ.pop("REDIS_URL", None)
    django_start(env)
    from django.conf import settings
    from django.db import connection

    from payments.ledger import ledger_check

    started = time.monotonic()
    print(f"bench/payments on {urlparse(database_url).hostname}/{connection.settings_dict['NAME']}")
    print(f"machine: {machine()}")
    tasks = (
        f"Redis broker ({redis_url}); events left in the outbox, no worker running"
        if redis_url
        else "run in-process (no BENCH_REDIS_URL): each payment's event fan-out runs after its commit"
    )
    print(f"tasks: {tasks}")
    spread, special = seed(args.customers)
    seed_day_of_payments(special["fullday"], args.day_payments)
    connection.close()
    conn_max_age = settings.DATABASES["default"]["CONN_MAX_AGE"]
    print(
        f"seeded {args.customers} spread customers, the hot, in-process and full-day ones "
        f"({args.day_payments} payments today on the last); CONN_MAX_AGE={conn_max_age} "
        f"[{time.monotonic() - started:.0f}s]"
    )

    single_ms, statements = in_process(special["inprocess"], args.in_process)
    control = sum(1 for sql in statements if sql.strip('"').upper().startswith(TRANSACTION_CONTROL))
    connection.close()
    if args.in_process_only:
        in_process_report(statements, control, single_ms, args.in_process, conn_max_age)
        return

    server, base = start_server(env, args.workers, args.server)
    print(f"server: {args.server}, {args.workers} workers")
    try:
        run = {"clients": args.clients, "seconds": args.duration}
        run_wrk(base, spread, work_dir, clients=args.clients, seconds=3)  # warm-up
        spread_result = run_wrk(base, spread, work_dir, **run)
        print(f"spread ({args.customers} accounts, {args.clients} clients): {spread_result.describe()}")
        from bankapi.models import Account

        hot_before = Account.objects.get(id=special["hot"].account_id).balance
        connection.close()
        hot_result = run_wrk(base, [special["hot"]], work_dir, **run)
        print(f"hot (1 account, {args.clients} clients): {hot_result.describe()}")
        hot_check = check_hot_account(special["hot"], hot_result, args.clients, hot_before)
        print(f"hot account check: {hot_check}")
        connection.close()
        # Each connection waits this long before each request: about half the
        # spread rate once the answer time is added.
        target_rate = spread_result.ok_per_second / 2
        delay_ms = max(1, int(args.clients * 1000 / target_rate - single_ms))
        half_result = run_wrk(base, spread, work_dir, delay_ms=delay_ms, **run)
        print(
            f"half rate (aimed at {target_rate:.0f}/s, {delay_ms} ms between requests per client): "
            f"{half_result.describe()}"
        )
        day_result = run_wrk(base, [special["fullday"]], work_dir, **run)
        day_share = day_result.ok_per_second / hot_result.ok_per_second
        print(
            f"full day (1 account with {args.day_payments} payments today): {day_result.describe()} "
            f"= {day_share:.0%} of the hot run"
        )
    finally:
        server.terminate()
        server.wait()

    tps = run_pgbench(database_url, clients=args.clients, seconds=args.duration)
    print(f"pgbench tpcb-like ({args.clients} clients, {args.duration}s): tps={tps:.0f}")
    in_process_report(statements, control, single_ms, args.in_process, conn_max_age)
    report = ledger_check()
    print(f"ledger invariant: {'holds' if report.ok else report}")
    print(
        f"total bench time {time.monotonic() - started:.0f}s; load average now {os.getloadavg()[0]:.1f} "
        "(other work on the machine lowers every figure)"
    )
    shutil.rmtree(work_dir, ignore_errors=True)
    if redis_url:
        flush_redis(redis_url)
    spread_ratio = spread_result.ok_per_second / tps
    hot_ratio = hot_result.ok_per_second / tps
    if hot_check == "FAILED" or not report.ok:
        print(f"ratio={spread_ratio:.3f} hot={hot_ratio:.3f} CHECKS FAILED")
        raise SystemExit(1)
    print(f"ratio={spread_ratio:.3f} hot={hot_ratio:.3f}")


if __name__ == "__main__":
    main()
