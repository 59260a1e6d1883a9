"""Where one payment's CPU goes: `bench/payment_cpu.py [--payments 300] [--profile]`.

The figure to decide a speed change by on a shared machine: wall time moves with
the other work on the host, the CPU this process spends per payment much less.
Seeds the bench database as `bench/payments` does (production settings, DEBUG
off, PostgreSQL; with BENCH_REDIS_URL, Redis as broker and request budgets
counted there, as deployed), then, in this process with Django's test client:
`--warmup` payments, then `--payments` payments, and prints the median wall time
of one payment and the CPU time of this process per payment
(`time.process_time`; PostgreSQL's and Redis's own work are not in it). With
`--profile`, the same payments again under cProfile (which slows them: read its
shares, not its times), the top functions by own time and by cumulative time.

THE BENCH DATABASE IS WIPED (every table truncated), as by `bench/payments`.
"""

import argparse
import cProfile
import io
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path

import payments_in_process
import serving
from payments_in_process import StatementTrace
from payments_seed import seed
from serving import fail, production_environment


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=300, help="payments timed (300)")
    parser.add_argument("--warmup", type=int, default=30, help="payments before timing (30)")
    parser.add_argument("--profile", action="store_true", help="then the same payments under cProfile")
    parser.add_argument("--top", type=int, default=40, help="functions listed per profile table (40)")
    parser.add_argument("--dump", metavar="FILE", help="with --profile: also write it there (pstats)")
    args = parser.parse_args(argv)

    database_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL database the bench may wipe")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-payment-cpu-"))
    env = production_environment(database_url, work_dir)
    redis_url = os.environ.get("BENCH_REDIS_URL")
    if redis_url:
        env["REDIS_URL"] = redis_url
        serving.flush_redis(redis_url)
    else:
        os.environ.pop("REDIS_URL", None)
    serving.django_start(env)
    from django.db import connection

    _, special = seed(1)
    connection.close()
    pay = payments_in_process.in_process_payer(special["inprocess"])

    for _ in range(args.warmup):
        pay()
    with StatementTrace() as trace:
        pay()
    timings = []
    cpu_started = time.process_time()
    for _ in range(args.payments):
        started = time.perf_counter()
        pay()
        timings.append(time.perf_counter() - started)
    cpu = (time.process_time() - cpu_started) / args.payments
    print(f"load average {os.getloadavg()[0]:.1f}; Redis: {'yes' if redis_url else 'no'}")
    print(f"statements per payment: {len(trace.statements())}")
    print(
        f"one payment: wall median {statistics.median(timings) * 1000:.2f} ms, "
        f"CPU of this process {cpu * 1000:.2f} ms (over {args.payments})"
    )
    if args.profile:
        # The paying thread's CPU only: the process's would also charge to whatever
        # runs here the work of other threads (the connection pool's).
        profile = cProfile.Profile(time.thread_time)
        profile.enable()
        for _ in range(args.payments):
            pay()
        profile.disable()
        if args.dump:
            profile.dump_stats(args.dump)
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).strip_dirs().sort_stats(order).print_stats(args.top)
            print(out.getvalue())
    if redis_url:
        serving.flush_redis(redis_url)


if __name__ == "__main__":
    main()
