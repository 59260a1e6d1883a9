"""Benchmark: one run of 10,000 due scheduled payments.

    .venv/bin/python bench/scheduled_payments.py [--schedules 10000] [--accounts 1000] [--chunk 200]

Builds a throwaway test database from the configured one (SQLite by default; set
DATABASE_URL for PostgreSQL), creates schedules due today (UTC), times one
`scheduled_payments_run` for today, as the 02:00 UTC beat does, and prints
schedules per second and database queries per schedule. The test database is
dropped afterwards. (A run refuses a day after today, so the bench cannot run a
fixed future day.)
"""

import argparse
import os
import sys
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A throwaway test database and development secrets, even when DATABASE_URL is set.
os.environ.setdefault("BANKAPI_ENV", "development")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from schedules_seed import funded_accounts_seed, schedules_seed  # noqa: E402
from scratch import scratch_database  # noqa: E402

from payments.services.schedules import scheduled_payments_run, utc_today  # noqa: E402


class QueryCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def seed(schedules: int, accounts: int, day: date) -> None:
    rows = funded_accounts_seed(name="Bench", accounts=accounts, sandbox=True, balance=Decimal("1000.00"))
    schedules_seed(rows, schedules, day)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--accounts", type=int, default=1_000)
    parser.add_argument("--chunk", type=int, default=200)
    args = parser.parse_args()

    with scratch_database():
        print(f"Seeding {args.schedules} due schedules on {args.accounts} accounts ({connection.vendor})...")
        day = utc_today()
        seed(args.schedules, args.accounts, day)
        counter = QueryCounter()
        with connection.execute_wrapper(counter):
            started = time.perf_counter()
            summary = scheduled_payments_run(day, chunk_size=args.chunk)
            elapsed = time.perf_counter() - started
        assert summary.paid == args.schedules, f"expected every schedule paid, got {summary}"
        print(f"Ran {summary.runs} schedules in {elapsed:.2f} s")
        print(f"  {summary.runs / elapsed:.0f} schedules/second")
        print(f"  {counter.count / summary.runs:.1f} queries/schedule ({counter.count} queries)")


if __name__ == "__main__":
    main()
