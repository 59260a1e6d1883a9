"""Correct sign-ins sent at once: all of them must answer 200.

    BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/sign_ins_at_once.py [options]

Serves the API with gunicorn as deployed (deploy/gunicorn.conf.py, production
settings, the real Argon2 cost, the default password-check slots and waiters:
WEB_THREADS is the server's threads, as the environment template sets it) on a
kernel-picked loopback port, behind a pretend proxy (TRUSTED_PROXY_COUNT=1,
every request names its client in X-Forwarded-For). Then, `--rounds` times per
mode, `--at-once` users sign in with their right password at the same moment
(the threads released together by a barrier):

- one address: every sign-in from the same client (an office, an integrator's
  back end signing in several users);
- many addresses: each from an address of its own.

A sign-in waits for a check slot as long as the checks ahead of it take (up to
10 s) when its address has no recent failure, so with one slot per process
eight at once take about eight checks' time, and none may be refused.

Prints, per mode, the answers and the slowest sign-in of each round; as its last
line `all_200=<sign-ins that answered 200 / sign-ins sent>` (1.00 meets it) and
`slowest=<the slowest sign-in, seconds>`.

Bounded: `--rounds` rounds of `--at-once` requests per mode (30 s at most each),
loopback only. THE BENCH DATABASE IS WIPED (every table truncated):
BENCH_DATABASE_URL, else DATABASE_URL.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from serving import deployed_threads, django_start, fail, production_environment  # noqa: E402
from sign_in_flood import post, start_gunicorn  # noqa: E402
from sign_ins_under_flood import PASSWORD, seed_users  # noqa: E402


def one_round(
    port: int, program_id: str, emails: list[str], addresses: list[str]
) -> tuple[list[int], list[float]]:
    """Every user signs in at the same moment; each one's answer and wall time."""
    statuses: list[int] = [0] * len(emails)
    took: list[float] = [0.0] * len(emails)
    together = threading.Barrier(len(emails))

    def sign_in(n: int) -> None:
        together.wait(30)
        started = time.monotonic()
        try:
            statuses[n] = post(
                port,
                "/v1/auth/login",
                {"email": emails[n], "password": PASSWORD},
                {"X-Program-Id": program_id, "X-Forwarded-For": addresses[n]},
            )
        except OSError:
            statuses[n] = -1  # no answer at all
        took[n] = time.monotonic() - started

    threads = [threading.Thread(target=sign_in, args=(n,)) for n in range(len(emails))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses, took


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--at-once", type=int, default=8, help="sign-ins sent together (8)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per mode (5)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (2)")
    parser.add_argument(
        "--threads", type=int, default=deployed_threads(), help="threads per gunicorn worker (as deployed)"
    )
    args = parser.parse_args()
    if not (1 < args.at_once <= 64 and 0 < args.rounds <= 100):
        fail("--at-once between 2 and 64, --rounds between 1 and 100")

    database_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL database the bench may wipe")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-sign-ins-at-once-"))
    env = production_environment(database_url, work_dir)
    env.update(TRUSTED_PROXY_COUNT="1", LOG_LEVEL="ERROR", GUNICORN_CMD_ARGS="--access-logfile /dev/null")
    os.environ.pop("REDIS_URL", None)  # tasks in-process, budgets in each process's memory
    django_start(env)
    from django.conf import settings
    from django.db import connection

    from authn.models import LoginThrottle

    program_id, emails = seed_users(args.at_once)
    connection.close()
    print(
        f"bench/sign_ins_at_once: gunicorn {args.workers} workers x {args.threads} threads, "
        f"PASSWORD_CHECKS_IN_FLIGHT={settings.PASSWORD_CHECKS_IN_FLIGHT}, waiters {max(1, args.threads - 2)} "
        f"per process; {args.at_once} correct sign-ins at once, {args.rounds} rounds per mode; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    sent, succeeded, slowest = 0, 0, 0.0
    modes = {
        "one address": ["10.9.0.1"] * args.at_once,
        "many addresses": [f"10.9.1.{n + 1}" for n in range(args.at_once)],
    }
    try:
        LoginThrottle.objects.all().delete()
        connection.close()
        server, port = start_gunicorn(env, args.workers, args.threads)
        try:
            for name, addresses in modes.items():
                answers: Counter = Counter()
                times, refused_after = [], []
                for _ in range(args.rounds):
                    statuses, took = one_round(port, program_id, emails, addresses)
                    answers.update(statuses)
                    times.append(max(took))
                    refused_after += [f"{t:.2f}" for s, t in zip(statuses, took, strict=True) if s != 200]
                sent += sum(answers.values())
                succeeded += answers[200]
                slowest = max(slowest, *times)
                shown = ", ".join(f"{status}: {count}" for status, count in sorted(answers.items()))
                rounds = " ".join(f"{took:.2f}" for took in times)
                refusals = f"; refusals after (s): {' '.join(refused_after)}" if refused_after else ""
                print(
                    f"{name}: answers {shown}; slowest sign-in per round (s): {rounds}{refusals}", flush=True
                )
        finally:
            server.terminate()
            server.wait()
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    print(
        f"all_200={succeeded / sent:.2f} slowest={slowest:.2f} "
        f"({succeeded}/{sent} correct sign-ins sent {args.at_once} at once answered 200)"
    )


if __name__ == "__main__":
    main()
