"""The steps of bench/pipeline.py that measure one kind of work alone
(settlement, schedules, deliveries), against the door's rate R, and the waits
the bench polls with (each bounded in time)."""

import dataclasses
import math
import time

from payments_seed import Target
from pipeline_parts import Processes, QueryCounter, Receiver
from serving import fail


def settle_alone(rate: float) -> float:
    """Step 2: what the door left PENDING, settled in this process."""
    from django.conf import settings
    from django.db import connection

    from payments.models import PaymentRequest
    from payments.services.settlement import payments_settle_pending

    pending = PaymentRequest.objects.filter(status=PaymentRequest.Status.PENDING, sandbox=False).count()
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        started = time.perf_counter()
        settled = payments_settle_pending(sandbox=False)
        elapsed = time.perf_counter() - started
    chunks = settled // settings.SETTLEMENT_CHUNK + 1  # the last one short (or empty)
    statements = counter.count + 2 * chunks  # BEGIN and COMMIT of each chunk's transaction
    speed = settled / elapsed
    print(
        f"settlement alone: {settled} of {pending} PENDING settled in {elapsed:.2f}s = {speed:.0f}/s "
        f"= {speed / rate:.2f} x R (target >= 3); {statements / max(settled, 1):.3f} statements "
        f"per payment ({counter.count} statements + BEGIN/COMMIT of {chunks} chunks; target <= 0.1)"
    )
    return speed


def schedules_alone(count: int, rate: float) -> float:
    """Step 3: `count` due schedules in a program of their own, run at once."""
    from decimal import Decimal

    from django.db import connection
    from schedules_seed import funded_accounts_seed, schedules_seed

    from payments.services.schedules import scheduled_payments_run, utc_today
    from payments.services.settlement import payments_settle_pending

    day = utc_today()
    accounts = funded_accounts_seed(
        name="Schedules", accounts=max(1, min(100, count)), sandbox=False, balance=Decimal("1000000.00")
    )
    schedules_seed(accounts, count, day)
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        started = time.perf_counter()
        summary = scheduled_payments_run(day)
        elapsed = time.perf_counter() - started
    speed = summary.runs / elapsed
    print(
        f"schedules alone: {summary.runs} run ({summary.paid} paid, {summary.held} held, "
        f"{len(summary.failed)} failed) in {elapsed:.2f}s = {speed:.0f}/s = {speed / rate:.2f} x R; "
        f"{counter.count / max(summary.runs, 1):.1f} statements per schedule"
    )
    if summary.paid != count:
        fail(f"expected {count} schedules paid, got {summary}")
    # Their payments settled now, untimed: the sustained run starts with nothing waiting.
    payments_settle_pending(sandbox=False)
    return speed


def endpoint_events(program_id) -> dict[str, float]:
    """Every event of the endpoint's program: event id -> created, unix seconds."""
    from events.models import Event

    rows = Event.objects.filter(program_id=program_id).values_list("event_id", "created_at")
    return {str(event_id): created.timestamp() for event_id, created in rows}


def wait_for(condition, seconds: float, processes: Processes) -> bool:
    """Poll `condition` every half second for at most `seconds`; fails the bench
    if a process it started has died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        dead = processes.check_alive()
        if dead:
            fail(f"{dead} exited:\n{processes.log_tail(dead)}")
        time.sleep(0.5)
    return condition()


def deliveries_alone(receiver: Receiver, program_id, rate: float, seconds: float, processes: Processes):
    """Step 4: the worker (started by the caller) delivers the events steps 1-2 wrote."""
    expected = endpoint_events(program_id)
    drained = wait_for(lambda: receiver.count() >= len(expected), seconds, processes)
    arrivals = receiver.snapshot()
    times = sorted(arrivals[e].arrived for e in expected if e in arrivals)
    span = times[-1] - times[0] if len(times) > 1 else math.inf
    speed = (len(times) - 1) / span if span else 0.0
    per_payment = len(expected) / max(1, len({a.request_id for a in arrivals.values()}))
    print(
        f"deliveries alone: {len(times)} of {len(expected)} events delivered "
        f"({'all' if drained else f'NOT ALL within {seconds:.0f}s'}), first to last in {span:.1f}s "
        f"= {speed:.0f}/s = {speed / rate:.2f} x R; {per_payment:.1f} events per payment, so "
        f"{speed / per_payment / rate:.2f} x R in payments"
    )
    return speed


def all_done(receiver: Receiver, program_id) -> bool:
    """Nothing left to settle, and every event of the endpoint's program received."""
    from events.models import Event
    from payments.models import PaymentRequest

    pending = PaymentRequest.objects.filter(status=PaymentRequest.Status.PENDING, sandbox=False)
    return not pending.exists() and receiver.count() >= Event.objects.filter(program_id=program_id).count()


def fresh_targets(targets: list[Target]) -> list[Target]:
    """The targets with new access tokens for their users: a token lives 15
    minutes, and the sustained run lasts longer."""
    from authn.models import User
    from authn.tokens import ACCESS, encode_token

    users = {
        str(user.customer_id): user
        for user in User.objects.filter(customer_id__in=[t.customer_id for t in targets])
    }
    return [
        dataclasses.replace(target, token=encode_token(users[target.customer_id], ACCESS))
        for target in targets
    ]
