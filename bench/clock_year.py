"""Benchmark: a test clock with 100 customers and 100 monthly schedules advanced a year.

    .venv/bin/python bench/clock_year.py [--customers 100] [--days 365]

Builds a throwaway test database from the configured one (SQLite by default; set
DATABASE_URL for PostgreSQL), makes a sandbox test clock and its customers on
demand (the service the route calls: user, funded GBP and EUR accounts,
beneficiary, card), one monthly schedule per customer starting the clock's next
day, then times one advance of `--days` days (`sandbox.clocks.clock_advance`, as
the route runs it: every moment's expiry sweeps, each day's 02:00 UTC schedule
run). Prints the time, the runs paid and the queries per moment. The test
database is dropped afterwards.
"""

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A throwaway test database and development secrets, even when DATABASE_URL is set.
os.environ.setdefault("BANKAPI_ENV", "development")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from schedules_seed import schedules_seed  # noqa: E402
from scratch import scratch_database  # noqa: E402

from bankapi.models import Program, TestClock  # noqa: E402
from payments.models import ScheduleRun  # noqa: E402
from sandbox.clocks import advance_moments, clock_advance  # noqa: E402
from sandbox.customers import sandbox_customer_make  # noqa: E402


class QueryCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def seed(customers: int) -> TestClock:
    """A clock at 00:00 UTC 200 days ago, its customers and one monthly schedule each."""
    frozen = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=200)
    program = Program.objects.create(name="Bench Clock Program", account_type=Program.AccountType.CONSUMER)
    clock = TestClock.objects.create(program=program, sandbox=True, name="Bench year", frozen_time=frozen)
    first_day = (frozen + timedelta(days=1)).date()
    accounts = []
    for _ in range(customers):
        with transaction.atomic():
            accounts.append(sandbox_customer_make(program=program, name=None, clock=clock).account)
    schedules_seed(accounts, customers, first_day, Decimal("10.00"))
    return clock


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--customers", type=int, default=100)
    parser.add_argument("--days", type=int, default=365)
    args = parser.parse_args()
    # Seeding only: the users' password hashing is not what is measured.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    with scratch_database():
        print(
            f"Seeding a clock with {args.customers} customers and monthly schedules ({connection.vendor})..."
        )
        clock = seed(args.customers)
        to = clock.frozen_time + timedelta(days=args.days)
        moments = len(advance_moments(clock.frozen_time, to, clock.id))
        counter = QueryCounter()
        with connection.execute_wrapper(counter):
            started = time.perf_counter()
            advanced = clock_advance(clock=clock, to=to)
            elapsed = time.perf_counter() - started
        runs = ScheduleRun.objects.filter(schedule__customer__test_clock=clock)
        paid = runs.filter(outcome=ScheduleRun.Outcome.PAID).count()
        assert advanced.frozen_time == to and advanced.advancing_to is None
        assert paid == runs.count() > 0, f"expected every run paid, got {paid} of {runs.count()}"
        print(f"Advanced {args.days} days ({moments} moments) in {elapsed:.2f} s")
        print(f"  {paid} schedule runs paid ({paid / max(args.customers, 1):.0f} per schedule)")
        print(f"  {elapsed / moments * 1000:.1f} ms and {counter.count / moments:.1f} queries per moment")


if __name__ == "__main__":
    main()
