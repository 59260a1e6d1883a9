"""Statements and balances on a long history: .venv/bin/python bench/statements.py [--postings 100000]

Seeds one account whose ledger holds `--postings` postings spread evenly over the
last 365 days (about two payments for each funding; each payment with its
movement, postings and PENDING request, as acceptance writes them: one real
payment and one real funding are copied in bulk, so the copies follow the
schema), then times, in this process with Django's test client and a real access
token, the three routes as an integrator calls them:

- the statement of one day (json), and of the whole year (json, csv, camt053),
  which then holds every posting: cold (the first read of the year, its closed
  days' pieces written from the ledger and stored; the stored pieces are
  deleted before each such call) and warm (the pieces stored: read, and only
  today's lines written from the ledger);
- the balance as of a moment in the middle of the history, and now.

Each figure is the median of `--runs` calls (a warm one after one warm-up); the
warm year is also split into its balances, the stored pieces read and the tail
(today) written from the ledger.

THE BENCH DATABASE IS WIPED (every table flushed) at the start: it is
BENCH_DATABASE_URL (PostgreSQL), e.g. postgres://postgres@127.0.0.1:5432/stmtbench.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def configure() -> None:
    url = os.environ.get("BENCH_DATABASE_URL")
    if not url or not url.startswith("postgres"):
        raise SystemExit("bench/statements.py: set BENCH_DATABASE_URL to a PostgreSQL database it may wipe")
    os.environ["DATABASE_URL"] = url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["BANKAPI_ENV"] = "development"
    os.environ["DJANGO_DEBUG"] = "false"
    import django

    django.setup()


def seed(postings: int):
    """The account, its user's token and the moment its history starts."""
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.db.models import BigAutoField

    from authn.models import User
    from authn.tokens import ACCESS, encode_token
    from bankapi.models import Account, Customer, Program
    from bankapi.roles import Role
    from payments.ledger import ledger_check, ledger_fund_account
    from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest
    from payments.payees import Payee, UkAccount
    from payments.services.acceptance import PaymentInstruction, payment_accept

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    program = Program.objects.create(name="Bench program", account_type=Program.AccountType.CONSUMER)
    customer = Customer.objects.create(program=program, sandbox=False, name="Bench customer")
    user = User(email="statements@bench.example", program=program, sandbox=False, role=Role.CUSTOMER)
    user.customer = customer
    user.set_unusable_password()
    user.save()
    account = Account.objects.create(
        program=program, sandbox=False, customer=customer, currency="GBP", iban="GB33BUKB20201555555555"
    )
    ledger_fund_account(account, Decimal("1000000.00"), key="bench-funding", memo="Opening funds")
    funding = LedgerTransaction.objects.get(key="bench-funding")
    payment = payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal("1.00"),
            currency="GBP",
            reference="Bench payment",
            payee=Payee(name="Payee", account=UkAccount(sort_code="200000", account_number="55779911")),
        ),
    )
    start = datetime.now(UTC) - timedelta(days=365)
    step = timedelta(days=365) / postings
    name = connection.ops.quote_name

    def copy_sql(model, source: str, where: str, replace: dict[str, str], rows: str) -> str:
        columns = [f.column for f in model._meta.concrete_fields if not isinstance(f, BigAutoField)]
        chosen = [replace.get(column, f"{source}.{name(column)}") for column in columns]
        return (
            f"INSERT INTO {name(model._meta.db_table)} ({', '.join(map(name, columns))}) "
            f"SELECT {', '.join(chosen)} FROM {name(model._meta.db_table)} {source}, {rows} WHERE {where} "
            f"ORDER BY {rows}.n"
        )

    booked = "%s::timestamptz + (bench_rows.n * %s::interval)"
    with transaction.atomic(), connection.cursor() as cursor:
        # Every third posting a funding of 2.00, the others payments of 1.00.
        cursor.execute(
            "CREATE TEMPORARY TABLE bench_rows ON COMMIT DROP AS SELECT n, gen_random_uuid() AS tx_id, "
            "gen_random_uuid() AS request_id, n %% 3 = 0 AS credit FROM generate_series(1, %s) AS n",
            [postings - 2],
        )
        for template, credit in (
            (funding.id, "bench_rows.credit"),
            (payment.acceptance_id, "NOT bench_rows.credit"),
        ):
            cursor.execute(
                copy_sql(
                    LedgerTransaction,
                    "t",
                    f"t.id = %s AND {credit}",
                    {"id": "bench_rows.tx_id", "key": "NULL", "created_at": booked},
                    "bench_rows",
                ),
                [start, step, template],
            )
            cursor.execute(
                copy_sql(
                    LedgerPosting,
                    "p",
                    f"p.transaction_id = %s AND {credit}",
                    {
                        "transaction_id": "bench_rows.tx_id",
                        "created_at": booked,
                        "amount": "CASE WHEN bench_rows.credit THEN p.amount * 2 / 1000000 ELSE p.amount END",
                        # A payment's posting names its own request.
                        "request_id": "CASE WHEN p.request_id IS NOT NULL THEN bench_rows.request_id END",
                    },
                    "bench_rows",
                ),
                [start, step, template],
            )
        cursor.execute(
            copy_sql(
                PaymentRequest,
                "r",
                "r.id = %s AND NOT bench_rows.credit",
                {"id": "bench_rows.request_id", "acceptance_id": "bench_rows.tx_id", "created_at": booked},
                "bench_rows",
            ),
            [start, step, payment.id],
        )
        # The two real movements came first; the copies follow in booking order.
        posting = name(LedgerPosting._meta.db_table)
        cursor.execute(
            f"UPDATE {posting} SET created_at = %s WHERE transaction_id IN (%s, %s)",  # noqa: S608
            [start - timedelta(seconds=1), funding.id, payment.acceptance_id],
        )
        cursor.execute(
            f"UPDATE {posting} p SET balance_after = s.running FROM (SELECT id, "  # noqa: S608
            f"SUM(amount) OVER (ORDER BY created_at, id) AS running FROM {posting} "
            "WHERE account_id = %s) s WHERE p.id = s.id",
            [account.id],
        )
        cursor.execute(
            f"UPDATE {name(Account._meta.db_table)} SET balance = (SELECT SUM(amount) FROM {posting} "  # noqa: S608
            f"WHERE account_id = %s), last_booked_at = (SELECT MAX(created_at) FROM {posting} "
            "WHERE account_id = %s) WHERE id = %s",
            [account.id, account.id, account.id],
        )
        cursor.execute(f"ANALYZE {posting}")
        cursor.execute(f"ANALYZE {name(PaymentRequest._meta.db_table)}")
    report = ledger_check()
    if not report.ok:
        raise SystemExit(f"bench/statements.py: the seeded ledger is broken: {report}")
    count = LedgerPosting.objects.filter(account=account).count()
    return Account.objects.get(id=account.id), encode_token(user, ACCESS), start, count


class CpuClock:
    """CPU time of this process and of the database server process serving its
    connection (read from /proc: the server runs on this machine). On a
    machine shared with other work, wall time stretches with the load; the CPU
    the two processes spend stretches much less, so both are printed."""

    def __init__(self, backend_pid: int | None) -> None:
        self.path = Path(f"/proc/{backend_pid}/stat") if backend_pid else None
        self.tick = os.sysconf("SC_CLK_TCK")

    def database(self) -> float | None:
        if self.path is None or not self.path.exists():
            return None
        fields = self.path.read_text().rsplit(")", 1)[1].split()
        # utime and stime, in clock ticks (fields 14 and 15 of stat).
        return (int(fields[11]) + int(fields[12])) / self.tick


def median_ms(call, runs: int, clock: CpuClock, before=None) -> tuple[float, float, float | None]:
    """Medians of wall time, this process's CPU and the database's CPU, in ms;
    `before` (untimed) runs ahead of each call, the warm-up included."""
    if before is not None:
        before()
    call()
    walls, mine, theirs = [], [], []
    for _ in range(runs):
        if before is not None:
            before()
        began, cpu, database = time.perf_counter(), time.process_time(), clock.database()
        call()
        walls.append((time.perf_counter() - began) * 1000)
        mine.append((time.process_time() - cpu) * 1000)
        after = clock.database()
        if database is not None and after is not None:
            theirs.append((after - database) * 1000)
    return statistics.median(walls), statistics.median(mine), statistics.median(theirs) if theirs else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--postings", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    configure()

    from django.db import connection
    from django.test import Client

    from payments.models import StatementDay
    from payments.selectors import ledger as selectors
    from payments.statement_formats import JSON_LAYOUT, statement_json, statement_read

    began = time.perf_counter()
    account, token, start, count = seed(args.postings)
    print(f"seeded {count} postings on one account over 365 days in {time.perf_counter() - began:.1f} s")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    base = f"/v1/customers/{account.customer_id}/accounts/{account.id}"
    today = datetime.now(UTC).date()
    first = today - timedelta(days=365)
    middle = start + timedelta(days=180)

    def get(path: str, expect: str = "") -> None:
        response = client.get(base + path)
        if response.status_code != 200 or expect not in response.content[:400].decode(errors="replace"):
            raise SystemExit(
                f"bench/statements.py: {path} answered {response.status_code}: {response.content[:300]}"
            )

    def forgotten() -> None:
        """No day of the account stored: the next read of the year is a first one."""
        StatementDay.objects.filter(account_id=account.id).delete()

    year = f"from={first}&to={today}"
    formats = (("json", ""), ("csv", "bookedAt"), ("camt053", "Document"))

    def year_of(fmt: str, expect: str):
        return lambda: get(f"/statements?{year}&format={fmt}", expect)

    closed = selectors.last_closed_day(account)
    if closed is None:
        raise SystemExit("bench/statements.py: the seeded account has booked nothing")
    figures = [
        (
            "statement, one day (json)",
            lambda: get(f"/statements?from={middle.date()}&to={middle.date()}"),
            None,
        ),
        *((f"statement, a year ({fmt}) cold", year_of(fmt, expect), forgotten) for fmt, expect in formats),
        *((f"statement, a year ({fmt}) warm", year_of(fmt, expect), None) for fmt, expect in formats),
        (
            "balance as of mid-history",
            lambda: get(f"/balances?asOf={middle.strftime('%Y-%m-%dT%H:%M:%SZ')}"),
            None,
        ),
        ("balance now", lambda: get("/balances"), None),
        (
            "  warm year: the two balances",
            lambda: selectors._balances(account, selectors.day_start(first), selectors.day_start(today)),
            None,
        ),
        (
            "  warm year: pieces read",
            lambda: selectors._stored_days(account, JSON_LAYOUT, first, closed),
            None,
        ),
        (
            "  warm year: tail written",
            lambda: list(
                selectors._day_lines(
                    account,
                    selectors.day_start(today),
                    selectors.day_start(today + timedelta(days=1)),
                    JSON_LAYOUT,
                )
            ),
            None,
        ),
        ("  warm year: statement read", lambda: statement_read(account, first, today, JSON_LAYOUT), None),
        (
            "  warm year: read + JSON body",
            lambda: statement_json(statement_read(account, first, today, JSON_LAYOUT)),
            None,
        ),
    ]
    entries = statement_read(account, first, today, JSON_LAYOUT).entries
    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), pg_backend_pid()")
        version, backend = cursor.fetchone()
    clock = CpuClock(backend)
    stored = StatementDay.objects.filter(account_id=account.id, layout=JSON_LAYOUT.key)
    days, size = stored.count(), sum(len(lines) for lines in stored.values_list("lines", flat=True))
    print(f"{version.split(' on ')[0]}; year statement: {entries} entries")
    print(f"json: {days} days stored, {size:,} characters; closed through {closed}")
    print(f"uptime: {uptime()}")
    print(f"{'':32} {'wall':>9}    CPU: {'bench':>7} + {'database':>8} (medians of {args.runs})")
    for label, call, before in figures:
        wall, mine, theirs = median_ms(call, args.runs, clock, before)
        database = f"{theirs:8.0f}" if theirs is not None else "       ?"
        print(f"{label:32} {wall:9.1f} ms      {mine:7.1f} + {database} ms")
    tick = 1000 / clock.tick
    print(f"uptime: {uptime()}; the database's CPU is counted in ticks of {tick:.0f} ms")


def uptime() -> str:
    """What `uptime` prints: the load averages over 1, 5 and 15 minutes."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


if __name__ == "__main__":
    main()
