"""Webhook deliveries at their own pace: a backlog of events to one endpoint, sent
by the webhooks worker, in events per second.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    BENCH_REDIS_URL=redis://127.0.0.1:6379/9 .venv/bin/python bench/deliveries.py [--payments 5000]

As deployed with a broker: one webhooks worker process (the Procfile's `webhooks`:
prefork, 2 processes, reading only the deliveries' queue) runs the outbox relay and
the drains; one endpoint is subscribed to `payment_request.accepted` and
`.settled` on a receiver on a loopback port (HTTP/1.1, answers 200 at once,
`bench/webhook_receiver.py`). Once a first event has arrived (the worker is up),
this process commits the events of `--payments` payments at once, two each (an
accepted and a settled event per payment, with the body of a real payment's
event), and times from that commit to the last arrival: the whole path of the
relay's fan-out, the drain tasks, the signed POSTs and the recording of each
attempt. Every event must arrive once. Prints events/s and the payments/s they
stand for (events / 2).

The door (payments accepted per second) is not measured in this run; compare
with `bench/payments` on the same machine (bench/README.md).

Production settings with `WEBHOOKS_ALLOW_LOOPBACK` on (so the receiver may be
plain http on loopback), with secrets generated for the run. THE BENCH DATABASE IS WIPED (every
table truncated) at the start, and the Redis database emptied before and after.
"""

import argparse
import os
import subprocess
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from payments_seed import seed  # noqa: E402
from serving import broker_bench_environment, django_start, fail, flush_redis, machine  # noqa: E402
from webhook_receiver import WebhookReceiver  # noqa: E402


def backlog(account_id: str, payments: int) -> int:
    """Commit the events of `payments` payments at once (accepted, then settled,
    per payment; one INSERT per thousand rows), not fanned out yet: the outbox
    as a burst of payments leaves it. Answers how many."""
    from django.db import transaction

    from bankapi.models import Account
    from events.models import Event, EventType
    from events.recording import event_new
    from payments.services.acceptance import PaymentInstruction, payment_accept

    account = Account.objects.get(id=account_id)
    with transaction.atomic():
        # One real payment gives the body every event of the backlog carries.
        model = payment_accept(
            account=account,
            instruction=PaymentInstruction(amount=Decimal("1.00"), currency="GBP", reference="Deliveries"),
        )
        template = Event.objects.filter(resource_id=str(model.id)).get().data
        transaction.set_rollback(True)
    events = []
    for _ in range(payments):
        request_id = str(uuid.uuid4())
        for event_type in (EventType.PAYMENT_REQUEST_ACCEPTED, EventType.PAYMENT_REQUEST_SETTLED):
            events.append(
                event_new(
                    type=event_type,
                    program_id=account.program_id,
                    sandbox=False,
                    resource_type="payment_request",
                    resource_id=request_id,
                    data={**template, "requestId": request_id},
                    customer_id=account.customer_id,
                )
            )
    with transaction.atomic():
        Event.objects.bulk_create(events, batch_size=1000)
    return len(events)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--payments", type=int, default=5000, help="payments' worth of events, two each (5000)"
    )
    parser.add_argument(
        "--worker",
        default="--concurrency=2",
        help="options of the webhooks worker (the Procfile's: --concurrency=2)",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for every event (900)")
    args = parser.parse_args()

    bench = broker_bench_environment("deliveries")
    env, redis_url, work_dir = bench.env, bench.redis_url, bench.work_dir
    django_start(env)
    from django.db import connection

    from bankapi.models import Account
    from events.endpoints import endpoint_create
    from events.models import Delivery, EventType

    _, special = seed(1)
    target = special["hot"]
    receiver = WebhookReceiver.start()
    program_id = Account.objects.get(id=target.account_id).program_id
    endpoint_create(
        program_id=program_id,
        sandbox=False,
        url=receiver.url,
        event_types=[EventType.PAYMENT_REQUEST_ACCEPTED, EventType.PAYMENT_REQUEST_SETTLED],
    )
    described = machine()
    connection.close()

    log = (work_dir / "webhooks.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", env["CELERY_WEBHOOKS_QUEUE"],
         *args.worker.split(), "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        backlog(target.account_id, 1)  # the worker is up once these arrive
        if not receiver.wait_for(2, 90):
            fail(f"the webhooks worker delivered nothing in 90 s (log: {work_dir / 'webhooks.log'})")
        before, started = receiver.count(), time.time()
        made = backlog(target.account_id, args.payments)
        committed = time.time()
        arrived_all = receiver.wait_for(before + made, args.timeout)
        last = max(arrival.received_at for arrival in receiver.snapshot())
    finally:
        worker.terminate()
        worker.wait(60)
        log.close()
        receiver.stop()
        flush_redis(redis_url)

    delivered = receiver.count() - before
    seconds = max(last - committed, 1e-6)
    twice = Delivery.objects.filter(attempts__gt=1).count()
    connection.close()
    print(f"machine: {described}; webhooks worker {args.worker}")
    print(
        f"deliveries: {made} events ({args.payments} payments, two each) to one endpoint in "
        f"{seconds:.1f} s: {delivered / seconds:.0f} events/s = {delivered / seconds / 2:.0f} payments/s; "
        f"{receiver.received - receiver.count()} redelivered, {twice} sent more than once, "
        f"{receiver.connections} connections"
    )
    print(receiver.summary(since=started))
    print("the door is not measured in this run: compare with bench/payments on this machine")
    if not arrived_all:
        fail(f"{made - delivered} of {made} events did not arrive in {args.timeout:g} s")


if __name__ == "__main__":
    main()
