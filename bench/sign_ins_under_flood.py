"""Real users' sign-ins during a flood of failed sign-ins from 100 addresses.

    BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/sign_ins_under_flood.py [options]

Serves the API with gunicorn as deployed (deploy/gunicorn.conf.py, production
settings, the real Argon2 cost, the default password-check slots) on a
kernel-picked loopback port, behind a pretend proxy: TRUSTED_PROXY_COUNT=1, and
every request names its client in X-Forwarded-For. For `--duration` seconds per
mode, `--users` real users sign in with their right password, `--sign-ins`
sign-ins in all, evenly spread, each from an address with no failed sign-in (a
person signs in now and then, from wherever they are; a client that retries a
refused sign-in every second from one address gathers failures as the flood's
addresses do, since a refusal counts as a failure of its address):

- quiet: the sign-ins alone;
- flood: the same while flooder threads send `--flood-rate` failed sign-ins a
  second in all (unknown e-mails, wrong passwords), open loop, from
  `--addresses` client addresses in turn (100), so that each address soon has
  failures but none reaches the client throttle (50 in 15 minutes) in a run.

Prints, per mode, how many of the real sign-ins answered 200 and their median
latency, and the flood's answers; as its last line the flood mode's figures as
ratios to their targets: `success=<share that succeeded / 0.9>` (at least 1
meets the target of 9 in 10) and `latency=<median / 0.5 s>` (at most 1 meets it).

Bounded: at most `--duration` seconds per mode (and the requests then in flight,
30 s at most each), loopback only. THE BENCH DATABASE IS WIPED (every table
truncated): BENCH_DATABASE_URL, else DATABASE_URL.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from payments_bench import django_start, fail, production_environment  # noqa: E402
from serving import deployed_threads  # noqa: E402
from sign_in_flood import post, start_gunicorn  # noqa: E402

TARGET_SHARE = 0.9
TARGET_MEDIAN_SECONDS = 0.5
PASSWORD = "Bench sign-in passphrase 7"


@dataclass
class Mode:
    name: str
    latencies: list[float] = field(default_factory=list)
    answers: Counter = field(default_factory=Counter)
    flood: Counter = field(default_factory=Counter)
    # Seconds into the mode at which each real sign-in that was not answered 200 was sent.
    refused_at: list[float] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return sum(self.answers.values())

    @property
    def succeeded(self) -> int:
        return self.answers[200]

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) if self.latencies else float("inf")

    def describe(self) -> str:
        others = {status: count for status, count in sorted(self.answers.items()) if status != 200}
        flood = ", ".join(f"{status}: {count}" for status, count in sorted(self.flood.items())) or "none"
        when = ", ".join(f"{at:.1f}s" for at in sorted(self.refused_at))
        return (
            f"{self.name}: real sign-ins {self.succeeded}/{self.sent} answered 200, "
            f"median {self.median:.3f}s, others {others or 'none'}"
            + (f" (sent at {when})" if when else "")
            + f"; flood answers: {flood}"
        )


def seed_users(count: int) -> tuple[str, list[str]]:
    """A program and `count` users of it with PASSWORD; their e-mails."""
    from authn.models import User
    from bankapi.models import Customer, Program
    from bankapi.roles import Role

    program = Program.objects.create(name="Bench program", account_type=Program.AccountType.CONSUMER)
    emails = []
    for n in range(count):
        customer = Customer.objects.create(program=program, sandbox=False, name=f"Bench user {n}")
        user = User(
            email=f"user-{n}@bench.example",
            program=program,
            sandbox=False,
            role=Role.CUSTOMER,
            customer=customer,
        )
        user.set_password(PASSWORD)
        user.save()
        emails.append(user.email)
    return str(program.id), emails


def run_mode(mode: Mode, port: int, program_id: str, emails: list[str], args, flooders: int) -> None:
    lock = threading.Lock()
    stop = threading.Event()
    per_user = max(1, args.sign_ins // len(emails))
    interval = args.duration / per_user
    begun = time.monotonic()

    def sign_in(email: str, user: int) -> None:
        # The user's first sign-in at a random point of its first interval: the users do not move in step.
        next_at = time.monotonic() + interval * (uuid.uuid4().int % 1000) / 1000
        for n in range(per_user):
            index = user * per_user + n  # a distinct address for each sign-in of the run
            address = f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"
            if stop.wait(max(0.0, next_at - time.monotonic())):
                return
            started = time.monotonic()
            status = post(
                port,
                "/v1/auth/login",
                {"email": email, "password": PASSWORD},
                {"X-Program-Id": program_id, "X-Forwarded-For": address},
            )
            with lock:
                mode.answers[status] += 1
                if status == 200:
                    mode.latencies.append(time.monotonic() - started)
                else:
                    mode.refused_at.append(started - begun)
            next_at += interval

    def flood(first: int) -> None:
        # Open loop: each flooder keeps its pace whatever the answers, up to its
        # one request in flight, cycling through its share of the addresses.
        pace = flooders / args.flood_rate
        # Each in a /64 of its own: the client throttle counts IPv6 clients by /64.
        addresses = [f"2001:db8:{n:x}::1" for n in range(first, args.addresses, flooders)]
        next_at, sent = time.monotonic(), 0
        while not stop.is_set():
            status = post(
                port,
                "/v1/auth/login",
                {"email": f"nobody-{uuid.uuid4().hex}@bench.example", "password": "not the password 42"},
                {"X-Program-Id": program_id, "X-Forwarded-For": addresses[sent % len(addresses)]},
            )
            sent += 1
            with lock:
                mode.flood[status] += 1
            next_at += pace
            stop.wait(max(0.0, next_at - time.monotonic()))

    users = [threading.Thread(target=sign_in, args=(email, n)) for n, email in enumerate(emails)]
    flood_threads = [threading.Thread(target=flood, args=(n,)) for n in range(flooders)]
    for thread in flood_threads + users:
        thread.start()
    for thread in users:
        thread.join(args.duration + 60)
    stop.set()
    for thread in flood_threads:
        thread.join(60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=20, help="seconds per mode (20)")
    parser.add_argument("--users", type=int, default=4, help="real users, each from its own address (4)")
    parser.add_argument("--sign-ins", type=int, default=40, help="real sign-ins per mode, in all (40)")
    parser.add_argument("--addresses", type=int, default=100, help="the flood's client addresses (100)")
    parser.add_argument("--flood-rate", type=float, default=45, help="failed sign-ins a second, in all (45)")
    parser.add_argument("--flooders", type=int, default=32, help="flood client threads (32)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (2)")
    parser.add_argument(
        "--threads", type=int, default=deployed_threads(), help="threads per gunicorn worker (as deployed)"
    )
    args = parser.parse_args()
    if not (0 < args.duration <= 300 and 0 < args.sign_ins <= 1000 and 0 < args.users <= args.sign_ins):
        fail("--duration at most 300 s, --sign-ins at most 1000, --users between 1 and --sign-ins")
    if not (0 < args.flooders <= args.addresses and 0 < args.flood_rate <= 1000):
        fail("--flooders between 1 and --addresses, --flood-rate at most 1000 a second")

    database_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL database the bench may wipe")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-sign-ins-under-flood-"))
    env = production_environment(database_url, work_dir)
    # One proxy of ours in front, as deployed. The flood's 401s and 429s would fill
    # the screen: no error lines for them, no access lines (gunicorn reads
    # GUNICORN_CMD_ARGS over its configuration file).
    env.update(TRUSTED_PROXY_COUNT="1", LOG_LEVEL="ERROR", GUNICORN_CMD_ARGS="--access-logfile /dev/null")
    os.environ.pop("REDIS_URL", None)  # tasks in-process, budgets in each process's memory
    django_start(env)
    from django.conf import settings
    from django.db import connection

    from authn.models import LoginThrottle

    program_id, emails = seed_users(args.users)
    connection.close()
    print(
        f"bench/sign_ins_under_flood: gunicorn {args.workers} workers x {args.threads} threads, "
        f"PASSWORD_CHECKS_IN_FLIGHT={settings.PASSWORD_CHECKS_IN_FLIGHT} "
        f"wait {settings.PASSWORD_CHECK_WAIT_SECONDS}s; {args.sign_ins} real sign-ins from {args.users} "
        f"users; {args.flood_rate:.0f} failed sign-ins/s from {args.addresses} addresses; "
        f"{args.duration:.0f}s per mode; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    modes = [(Mode("quiet"), 0), (Mode("flood"), args.flooders)]
    try:
        for mode, flooders in modes:
            # A server of its own per mode: the flood's counts start from nothing.
            LoginThrottle.objects.all().delete()
            connection.close()
            server, port = start_gunicorn(env, args.workers, args.threads)
            try:
                run_mode(mode, port, program_id, emails, args, flooders)
            finally:
                server.terminate()
                server.wait()
            print(mode.describe(), flush=True)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    flooded = modes[1][0]
    share = flooded.succeeded / flooded.sent if flooded.sent else 0.0
    print(
        f"success={share / TARGET_SHARE:.2f} latency={flooded.median / TARGET_MEDIAN_SECONDS:.2f} "
        f"({flooded.succeeded}/{flooded.sent} real sign-ins succeeded under the flood, target 9 in 10; "
        f"median {flooded.median:.3f}s, target {TARGET_MEDIAN_SECONDS}s)"
    )


if __name__ == "__main__":
    main()
