"""The work behind the door: settlement, schedules and webhook deliveries against
the door's own pace, alone and as a sustained pipeline, in one run.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    BENCH_REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python bench/pipeline.py [--minutes 10]

As deployed on one node: production settings, gunicorn as deploy/gunicorn.conf.py
configures it, Redis as the broker, a real `celery -A config worker` (with its
outbox relay) and `celery -A config beat`, one webhook endpoint subscribed to
every event type on a receiver on a loopback port. Steps:

1. the door: wrk, spread payments for --door-seconds -> R payments/s; pgbench
   (tpcb-like, same clients) for reference;
2. settlement alone: everything the door left PENDING, in this process
   (`payments_settle_pending`): settled/s / R and statements per payment;
3. schedules alone: --schedules due schedules run by `scheduled_payments_run`
   (in another program, whose events no endpoint takes): schedules/s / R;
4. deliveries alone: the worker starts and delivers what steps 1-2 wrote
   (each payment's accepted and settled events) to the endpoint: deliveries/s / R;
5. the sustained pipeline: beat starts beside the worker; intake at a fraction
   f of R for --minutes at each of --fractions, then the backlog drained; per
   fraction the intake achieved, the largest settlement lag (from /metrics), the
   delivery latency (event createdAt -> first POST at the receiver) p50/p99 and
   the longest queues. The highest fraction with lag <= 60 s and p99 <= 5 s,
   as a ratio to R, is the last line's `pipeline=`.

Then `ledger_check()`, every payment settled once and every event delivered.

THE BENCH DATABASE IS WIPED (every table truncated) at the start, and the Redis
database emptied before and after. pgbench uses `<the bench database>_pgbench`.
Every process the bench starts is stopped when it ends, also on failure.
"""

import argparse
import math
import os
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from payments_load import run_pgbench, run_wrk  # noqa: E402
from payments_seed import seed  # noqa: E402
from pipeline_parts import (
    CpuShares,
    MetricsSampler,
    Processes,
    Receiver,
    celery_command,
    paced_intake,
    percentile,
    serve,
)  # noqa: E402
from pipeline_steps import (  # noqa: E402
    all_done,
    deliveries_alone,
    endpoint_events,
    fresh_targets,
    schedules_alone,
    settle_alone,
    wait_for,
)
from serving import (
    check_tools,
    django_start,
    fail,
    flush_redis,
    machine,
    production_environment,
)  # noqa: E402

LAG_LIMIT = 60.0
P99_LIMIT = 5.0


def sustained(args, base, spread, work_dir, rate, latency_ms, receiver, program_id, token, processes):
    """Step 5: intake at each fraction of R with the worker and beat running."""
    from django.db import connection

    results = []
    for fraction in args.fractions:
        sampler = MetricsSampler(base, token, args.sample_seconds)
        sampler.start()
        cpu = CpuShares(processes, connection.settings_dict["NAME"])
        cpu.start()
        started = time.time()
        intake = paced_intake(
            base,
            lambda: fresh_targets(spread),
            work_dir,
            clients=args.clients,
            seconds=max(1, round(args.minutes * 60)),
            rate=fraction * rate,
            latency_ms=latency_ms,
        )
        ended = time.time()
        cpu_text = cpu.stop()

        complete = wait_for(lambda: all_done(receiver, program_id), args.drain_seconds, processes)
        samples = sampler.stop()
        connection.close()
        # Every event written from the intake's start to the drain's end: the
        # intake's payments accepted, and settled (by beat's runs, up to a tick later).
        window = {e: c for e, c in endpoint_events(program_id).items() if c >= started}
        arrivals = receiver.snapshot()
        latencies = [arrivals[e].arrived - c if e in arrivals else math.inf for e, c in window.items()]
        lag = samples.lag_max(started, time.time())
        p50, p99 = (statistics.median(latencies), percentile(latencies, 0.99)) if latencies else (0, 0)
        met = intake.accepted > 0 and not intake.non2xx and complete
        met = met and lag is not None and lag <= LAG_LIMIT and p99 <= P99_LIMIT
        queues = ", ".join(f"{q}={n}" for q, n in sorted(samples.queues.items())) or "none seen"
        lag_text = f"{lag:.0f}s" if lag is not None else "not sampled"
        print(
            f"f={fraction:g}: intake {intake.per_second:.1f}/s = {intake.per_second / rate:.2f} x R "
            f"({intake.accepted} accepted in {intake.seconds:.0f}s, non-2xx {intake.non2xx}, "
            f"answer p99 {intake.p99_ms:.0f}ms); settlement lag max {lag_text}; deliveries "
            f"{len(latencies)} p50={p50:.2f}s p99={p99:.2f}s; queues max {queues}; outbox age max "
            f"{samples.outbox_max:.0f}s; {'drained' if complete else 'NOT DRAINED'} "
            f"{time.time() - ended:.0f}s after; {'met' if met else 'NOT MET'} "
            f"(lag <= {LAG_LIMIT:.0f}s, p99 <= {P99_LIMIT:.0f}s)"
            + (f"; {samples.failures} scrapes failed: {samples.last_failure}" if samples.failures else "")
            + (f"; first non-2xx: {intake.sample[:200]}" if intake.non2xx else "")
        )
        print(f"f={fraction:g}: during the intake, {cpu_text}")
        results.append((fraction, intake.per_second, met))
        if not complete:
            # The next fraction would start on this one's backlog: its figures
            # would measure the backlog, not its own rate.
            skipped = [f"{f:g}" for f in args.fractions if f > fraction]
            if skipped:
                print(f"f={','.join(skipped)}: skipped, the backlog of f={fraction:g} did not drain")
            break
    return results


def final_checks(receiver: Receiver, program_id, endpoint_id) -> bool:
    from collections import Counter

    from events.models import Delivery
    from payments.ledger import ledger_check
    from payments.models import LedgerTransaction, PaymentRequest

    report = ledger_check()
    requests = PaymentRequest.objects.filter(sandbox=False)
    unsettled = requests.exclude(status=PaymentRequest.Status.SETTLED).count()
    settled = requests.filter(status=PaymentRequest.Status.SETTLED).count()
    keys = Counter(
        LedgerTransaction.objects.filter(kind=LedgerTransaction.Kind.SETTLEMENT).values_list("key", flat=True)
    )
    twice = sum(1 for n in keys.values() if n > 1)
    expected = endpoint_events(program_id)
    arrivals = receiver.snapshot()
    missing = len(set(expected) - set(arrivals))
    not_delivered = Delivery.objects.filter(endpoint_id=endpoint_id).exclude(state=Delivery.State.DELIVERED)
    order = {}
    for arrival in arrivals.values():
        order.setdefault(arrival.request_id, {})[arrival.type] = arrival.arrived
    overtaken = sum(
        1
        for kinds in order.values()
        if kinds.get("payment_request.settled", math.inf) < kinds.get("payment_request.accepted", 0)
    )
    ok = report.ok and not unsettled and settled == len(keys) and not twice and not missing
    ok = ok and not not_delivered.exists() and not overtaken
    print(f"ledger invariant: {'holds' if report.ok else report}")
    print(
        f"settled once: {settled} settled, {unsettled} not settled, {len(keys)} settlement movements, "
        f"{twice} keys twice"
    )
    print(
        f"every event delivered: {len(expected) - missing} of {len(expected)} received, "
        f"{receiver.repeats} repeats, {not_delivered.count()} deliveries not DELIVERED, "
        f"{overtaken} settled events before their accepted one"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--door-seconds", type=int, default=20, help="wrk's spread run at the door (20)")
    parser.add_argument("--pgbench-seconds", type=int, default=15, help="pgbench's run (15)")
    parser.add_argument("--clients", type=int, default=8, help="wrk connections and pgbench clients (8)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2, as deployed)")
    parser.add_argument("--customers", type=int, default=100, help="accounts the payments come from (100)")
    parser.add_argument("--schedules", type=int, default=2000, help="due schedules of step 3 (2000)")
    parser.add_argument("--minutes", type=float, default=10, help="intake minutes per fraction (10)")
    parser.add_argument("--fractions", default="0.3,0.6,0.9", help="fractions of R (0.3,0.6,0.9)")
    parser.add_argument("--concurrency", type=int, default=2, help="the Celery worker's concurrency (2)")
    parser.add_argument("--sample-seconds", type=float, default=5, help="/metrics scraped every (5)")
    parser.add_argument("--drain-seconds", type=float, default=300, help="backlog drain wait, at most (300)")
    parser.add_argument(
        "--final-drain-seconds", type=float, default=900, help="wait before the final checks, at most (900)"
    )
    parser.add_argument("--deliveries-seconds", type=float, default=600, help="step 4's wait, at most (600)")
    args = parser.parse_args()
    args.fractions = [float(f) for f in args.fractions.split(",") if f.strip()]
    if not args.fractions or not all(0 < f <= 2 for f in args.fractions):
        fail("--fractions: a comma-separated list of fractions of R, each in (0, 2]")

    check_tools()
    database_url = os.environ.get("BENCH_DATABASE_URL") or ""
    redis_url = os.environ.get("BENCH_REDIS_URL") or ""
    if not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL to a PostgreSQL database the bench may wipe")
    if not redis_url.startswith("redis://"):
        fail("set BENCH_REDIS_URL to a Redis database the bench may empty (the broker)")
    work_dir = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    token = secrets.token_urlsafe(24)
    env = production_environment(database_url, work_dir)
    env.update(
        REDIS_URL=redis_url,
        METRICS_TOKEN=token,
        PROMETHEUS_MULTIPROC_DIR=str(work_dir / "metrics"),
        # Lets a deployment deliver to a receiver on loopback (for benches on one host).
        WEBHOOKS_ALLOW_LOOPBACK="true",
    )
    flush_redis(redis_url)
    processes = Processes(work_dir, env)
    receiver = Receiver()
    # SIGTERM (a test's timeout, an operator) ends the run through the cleanup below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run(args, env, work_dir, token, processes, receiver, database_url)
    finally:
        processes.stop_all()
        receiver.stop()
        flush_redis(redis_url)
        shutil.rmtree(work_dir, ignore_errors=True)


def run(args, env, work_dir, token, processes, receiver, database_url) -> None:
    django_start(env)
    from django.conf import settings
    from django.db import connection

    from bankapi.models import Account
    from bankapi.ops import outbound
    from events.endpoints import endpoint_create
    from events.models import EventType

    started = time.monotonic()
    print(f"bench/pipeline on {connection.settings_dict['NAME']}; machine: {machine()}")
    spread, _ = seed(args.customers)
    program_id = Account.objects.get(id=spread[0].account_id).program_id
    worker_env = env
    everything = list(EventType.values)
    # WEBHOOKS_ALLOW_LOOPBACK is on in the run's environment (as a bench on one
    # host may): production settings take the loopback receiver.
    if not outbound.local_receivers_allowed():
        fail("production settings refuse the loopback receiver: is WEBHOOKS_ALLOW_LOOPBACK on?")
    endpoint = endpoint_create(program_id=program_id, sandbox=False, url=receiver.url, event_types=everything)
    print("webhooks: production settings deliver to the loopback receiver (WEBHOOKS_ALLOW_LOOPBACK)")
    connection.close()
    print(
        f"seeded {args.customers} customers; one endpoint subscribed to every event type "
        f"[{time.monotonic() - started:.0f}s]"
    )

    base = serve(processes, args.workers)
    run_wrk(base, spread, work_dir, clients=args.clients, seconds=3)  # warm-up
    door = run_wrk(base, spread, work_dir, clients=args.clients, seconds=args.door_seconds)
    rate = door.ok_per_second
    if rate <= 0:
        fail(f"the door accepted nothing: {door.describe()} {door.sample[:300]}")
    print(
        f"door (gunicorn {args.workers} workers, {args.clients} clients, {args.door_seconds}s): "
        f"{door.describe()}"
    )
    tps = run_pgbench(database_url, clients=args.clients, seconds=args.pgbench_seconds)
    print(
        f"pgbench tpcb-like ({args.clients} clients, {args.pgbench_seconds}s): tps={tps:.0f}; "
        f"R = {rate:.1f}/s = {rate / tps:.3f} x pgbench"
    )

    settle_speed = settle_alone(rate)
    schedule_speed = schedules_alone(args.schedules, rate)
    connection.close()

    # As deploy/Procfile runs them: a worker on the default queue (settlement,
    # schedules, the outbox relay) and one on the webhooks queue (the drains).
    default_queue, webhooks_queue = settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_WEBHOOKS_QUEUE
    for name, queue in (("worker", default_queue), ("webhooks", webhooks_queue)):
        processes.start(
            name,
            celery_command(
                "worker",
                f"--concurrency={args.concurrency}",
                f"--queues={queue}",
                "--loglevel=WARNING",
                "--without-gossip",
                "--without-mingle",
                f"--hostname=bench-pipeline-{name}@%h",
            ),
            worker_env,
        )
    delivery_speed = deliveries_alone(receiver, program_id, rate, args.deliveries_seconds, processes)
    connection.close()

    processes.start(
        "beat",
        celery_command(
            "beat",
            "--loglevel=WARNING",
            f"--schedule={work_dir / 'celerybeat-schedule'}",
            f"--pidfile={work_dir / 'beat.pid'}",
        ),
    )
    print(
        f"sustained: gunicorn {args.workers} workers, a Celery worker on {default_queue} and one on "
        f"{webhooks_queue} (concurrency {args.concurrency} each; the first runs the relay), beat; "
        f"{args.minutes:g} min per fraction"
    )
    # A connection's answer time below saturation, about: the door's median at
    # saturation shared by its connections; corrected after each wrk segment.
    latency_ms = min(door.p50_ms, 1000 * args.clients / rate) / 2
    results = sustained(
        args, base, spread, work_dir, rate, latency_ms, receiver, program_id, token, processes
    )
    # What is still waiting gets its time before the checks (the worker and beat still run).
    wait_for(lambda: all_done(receiver, program_id), args.final_drain_seconds, processes)
    processes.stop("beat")
    processes.stop("worker")
    processes.stop("gunicorn")

    ok = final_checks(receiver, program_id, endpoint.id)
    met = [(fraction, achieved) for fraction, achieved, good in results if good]
    best = max(met, key=lambda pair: pair[1])[1] / rate if met else 0.0
    print(
        f"total {time.monotonic() - started:.0f}s; load average now {os.getloadavg()[0]:.1f} "
        "(other work on the machine lowers every figure)"
    )
    line = (
        f"pipeline={best:.2f} settle={settle_speed / rate:.2f} schedules={schedule_speed / rate:.2f} "
        f"deliveries={delivery_speed / rate:.2f} R={rate:.1f} pgbench={tps:.0f}"
    )
    print(line if ok else f"{line} CHECKS FAILED")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
