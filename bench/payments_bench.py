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

Then the bare ceiling (bench/bare_payments.py: plain WSGI and Django's database
layer doing the payment's read and write, nothing else) beside the route, in
alternating slices of the spread mode, both served alike (`route / ceiling`).
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
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

from payments_in_process import TRANSACTION_CONTROL, check_hot_account, in_process, in_process_report
from payments_load import WrkResult, run_pgbench, run_wrk
from payments_seed import DAY_PAYMENTS_DEFAULT, seed, seed_day_of_payments
from serving import (
    BARE_APPLICATION,
    check_server,
    check_tools,
    django_start,
    fail,
    flush_redis,
    machine,
    production_environment,
    start_server,
)

# WrkResult: what a run reports, named here for the baseline's tests.
__all__ = ["WrkResult", "main"]


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
    found = [f"--server={args.server}"] if args.server != "gunicorn" else []
    return [*found, f"--pairs={args.pairs}"] if args.ceiling else [*found, "--no-ceiling"]


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


def tree(pid: int) -> list[int]:
    """A server's processes: its master and the workers it forked."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid, *map(int, children)]


def backends(database: str) -> list[int]:
    """PostgreSQL's server processes of `database` (only the side being measured sends to it)."""
    found = subprocess.run(["pgrep", "-f", f"postgres: .* {database} "], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU of the processes and of their reaped children, from /proc."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ticks += sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def run_side_by_side(
    env: dict[str, str],
    args: argparse.Namespace,
    route_server: subprocess.Popen,
    route_base: str,
    spread: list,
    work_dir: Path,
) -> dict[str, list[float]]:
    """The spread mode against the route, the bare ceiling (bench/bare_payments.py)
    and, with `--interleave`, the route of another commit, each served by the
    same gunicorn configuration with the same workers, all up at once: in
    `args.pairs` rounds of one slice of `args.duration` seconds each, in an
    order turned round from one round to the next. So a change in the host's
    load moves every side of a round together. Each side's payments/s per
    round, and the CPU per answer of its web processes and of PostgreSQL: on a
    host other work shares, the figures that move least with it."""
    servers = []
    sides = {"route": route_base}
    try:
        server, sides["ceiling"] = start_server(env, args.workers, "gunicorn", BARE_APPLICATION)
        servers.append(server)
        if args.interleave:
            checkout = args.interleave_checkout
            server, sides["baseline"] = start_server(env, args.workers, "gunicorn", root=checkout)
            servers.append(server)
        for base in list(sides.values())[1:]:
            run_wrk(base, spread, work_dir, clients=args.clients, seconds=3)  # warm-up
        found: dict[str, list[float]] = {
            key: [] for name in sides for key in (name, f"{name} web", f"{name} postgres")
        }
        names = list(sides)
        processes = {"route": route_server, **dict(zip(list(sides)[1:], servers, strict=True))}
        from django.db import connection

        database = connection.settings_dict["NAME"]
        for number in range(args.pairs):
            order = names[number % len(names) :] + names[: number % len(names)]
            for name in order if number % 2 == 0 else order[::-1]:
                web, postgres = cpu_seconds(tree(processes[name].pid)), cpu_seconds(backends(database))
                result = run_wrk(sides[name], spread, work_dir, clients=args.clients, seconds=args.duration)
                if result.non2xx:
                    fail(f"{name} answered {result.non2xx} non-2xx (first: {result.sample[:300]})")
                paid = result.requests
                found[name].append(result.ok_per_second)
                found[f"{name} web"].append(1000 * (cpu_seconds(tree(processes[name].pid)) - web) / paid)
                found[f"{name} postgres"].append(1000 * (cpu_seconds(backends(database)) - postgres) / paid)
            shown = [
                f"{name} {found[name][-1]:.1f}/s (CPU per payment: web {found[name + ' web'][-1]:.2f} ms, "
                f"PostgreSQL {found[name + ' postgres'][-1]:.2f} ms)"
                for name in names
            ]
            print(f"round {number + 1}: " + ", ".join(shown))
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    return found


def side_by_side_report(found: dict[str, list[float]]) -> None:
    """Each side's median, and the median over the rounds of each ratio."""

    def ratio(top: str, bottom: str) -> float:
        return statistics.median(t / b for t, b in zip(found[top], found[bottom], strict=True))

    def cpu(name: str) -> str:
        web, postgres = statistics.median(found[f"{name} web"]), statistics.median(found[f"{name} postgres"])
        return f"CPU per payment web {web:.2f} ms + PostgreSQL {postgres:.2f} ms = {web + postgres:.2f} ms"

    def cpu_ratio(top: str, bottom: str) -> float:
        # Payments per CPU second of `top` over `bottom`'s: the inverse of their CPU per payment.
        def total(name: str) -> list[float]:
            return [w + p for w, p in zip(found[f"{name} web"], found[f"{name} postgres"], strict=True)]

        return statistics.median(b / t for t, b in zip(total(top), total(bottom), strict=True))

    rounds, ceiling = len(found["route"]), statistics.median(found["ceiling"])
    print(f"ceiling (bare WSGI, median of {rounds} rounds): payments/s={ceiling:.1f}; {cpu('ceiling')}")
    print(f"route in the same rounds: payments/s={statistics.median(found['route']):.1f}; {cpu('route')}")
    by_cpu = cpu_ratio("route", "ceiling")
    print(f"route / ceiling: {ratio('route', 'ceiling'):.3f} (by CPU per payment: {by_cpu:.3f})")
    if "baseline" in found:
        print(
            f"baseline route in the same rounds: payments/s={statistics.median(found['baseline']):.1f}; "
            f"{cpu('baseline')}"
        )
        print(f"baseline / ceiling: {ratio('baseline', 'ceiling'):.3f}")
        print(
            f"route / baseline (interleaved): {ratio('route', 'baseline'):.3f} "
            f"(by CPU per payment: {cpu_ratio('route', 'baseline'):.3f})"
        )


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
        "--no-ceiling",
        dest="ceiling",
        action="store_false",
        help="skip the bare ceiling (bench/bare_payments.py), measured against the route in pairs",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=3,
        help="rounds of slices (each --duration) of the route, the ceiling and --interleave's route (3)",
    )
    parser.add_argument(
        "--interleave",
        metavar="COMMIT",
        help="also serve COMMIT's code (a temporary git worktree; its schema must be this checkout's) "
        "and measure its route in the same rounds as this checkout's and the ceiling",
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
    if args.interleave:
        from baseline import baseline_checkout

        with baseline_checkout(args.interleave, with_venv=False) as (checkout, _):
            args.interleave_checkout = checkout
            measure(args)
        return
    measure(args)


def measure(args: argparse.Namespace) -> None:
    """One run of the bench (see the module)."""

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
        if args.ceiling:
            connection.close()
            side_by_side_report(run_side_by_side(env, args, server, base, spread, work_dir))
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
