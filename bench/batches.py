"""Benchmark: verify and submit a 10,000-item batch across 100 payer accounts.

    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/batches.py \\
        [--items 10000] [--payers 100]

Builds a throwaway test database from the configured PostgreSQL one, seeds a
custodian with `--payers` client accounts, starts one real Celery worker process
(`--pool=solo`) on a queue of its own, then through the API (in-process test
client, the custodian's access token):

1. verify: POST the batch, time until the worker has checked every item;
2. initiate the draft and submit it with a TOTP confirmation (timed: the submit
   request, which writes the batch and its items), then time from its answer
   until the worker has funded the payers and paid every item.

Prints items per second for both, then runs the same verify and processing once
more in-process to count the database queries per item (the worker's own
queries cannot be counted from here). The test database is dropped afterwards.
Targets on the 2-core development machine: verify within 10 s, processing within
20 s for 10,000 items.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A throwaway test database and development secrets, even when DATABASE_URL is set.
os.environ.setdefault("BANKAPI_ENV", "development")

import django  # noqa: E402

django.setup()

import pyotp  # noqa: E402
from batches_seed import seed  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from scratch import scratch_database  # noqa: E402

from authn.models import User  # noqa: E402
from authn.tokens import tokens_issue  # noqa: E402
from bankapi.models import Account  # noqa: E402
from bankapi.scope import Scope  # noqa: E402
from batches.actors import Actor  # noqa: E402
from batches.models import Batch, Draft  # noqa: E402
from batches.rules import sent_payment_from_wire  # noqa: E402
from batches.services.challenges import payments_checked  # noqa: E402
from batches.services.creation import batch_create  # noqa: E402
from config.celery import app  # noqa: E402
from payments.ledger import ledger_check  # noqa: E402

URL = "/v1/batch-payments"
PAYEE = {"name": "Bench Payee", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}


class QueryCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


def payments(accounts: list[Account], items: int) -> list[dict]:
    return [
        {
            "payer": {
                "account": {
                    "type": "uk",
                    "sortCode": accounts[n % len(accounts)].sort_code,
                    "accountNumber": accounts[n % len(accounts)].account_number,
                }
            },
            "payee": PAYEE,
            "reference": f"Bench {n}",
            "amount": "1.00",
        }
        for n in range(items)
    ]


def post(client: Client, token: str, body: dict) -> dict:
    response = client.post(
        URL, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content[:500]
    return response.json()


def wait(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the worker")
        time.sleep(0.05)


def start_worker(queue: str) -> subprocess.Popen:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
    }
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=WARNING"]
    command += [
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-Q",
        queue,
        "-n",
        f"{queue}@%h",
    ]
    return subprocess.Popen(command, cwd=ROOT, env=env)


def timed_run(user: User, accounts: list[Account], items: int) -> tuple[float, float, float]:
    """Verify and submit through the API, the worker doing the background work."""
    client = Client()
    token = tokens_issue(user).access_token
    batch_payments = payments(accounts, items)

    started = time.perf_counter()
    draft_id = post(client, token, {"action": "verify", "payments": batch_payments})["requestId"]
    wait(lambda: Draft.objects.filter(id=draft_id, verified_at__isnull=False).exists(), timeout=300)
    verify_seconds = time.perf_counter() - started

    sca = post(client, token, {"action": "initiate", "payments": batch_payments, "batchId": draft_id})["data"]
    code = pyotp.TOTP(user.totp_secret).now()
    submit_started = time.perf_counter()
    submitted = post(
        client,
        token,
        {
            "action": "submit",
            "payments": batch_payments,
            "batchId": draft_id,
            "scaChallenge": sca["scaChallenge"],
            "confirmation": {"method": "totp", "code": code},
        },
    )["data"]
    started = time.perf_counter()
    submit_seconds = started - submit_started
    wait(lambda: Batch.objects.get(id=submitted["batchId"]).status in Batch.FINAL, timeout=600)
    process_seconds = time.perf_counter() - started
    batch = Batch.objects.get(id=submitted["batchId"])
    assert batch.status == Batch.Status.COMPLETED, batch.status
    assert batch.items.filter(status="SUCCESS").count() == items
    return verify_seconds, submit_seconds, process_seconds


def counted_run(user: User, accounts: list[Account], items: int) -> tuple[int, int]:
    """The same verification and processing in-process (tasks run eagerly), counting
    their queries: the worker's own queries cannot be counted from here."""
    batch_payments = payments(accounts, items)
    client = Client()
    token = tokens_issue(user).access_token
    app.conf.task_always_eager = True
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        post(client, token, {"action": "verify", "payments": batch_payments})
    verify_queries = counter.count
    # Created by the submit's service without its step-up: a TOTP code is good
    # once per 30-second step, and the step-up's few queries are per batch.
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        batch = _submitted(user, batch_payments)
    assert Batch.objects.get(id=batch.id).status == Batch.Status.COMPLETED
    return verify_queries, counter.count


def _submitted(user: User, batch_payments: list[dict]) -> Batch:
    """The batch written by the submit's service, as the custodian's token acts."""
    actor = Actor(
        scope=Scope(
            program_id=user.program_id,
            sandbox=user.sandbox,
            role=user.role,
            user_id=user.id,
            customer_id=None,
            custodian_id=user.custodian_id,
        )
    )
    sent = [sent_payment_from_wire(payment) for payment in batch_payments]
    checked, currency = payments_checked(actor, sent)
    with transaction.atomic():
        return batch_create(actor=actor, user=user, checked=checked, currency=currency, draft=None)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--payers", type=int, default=100)
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("Set DATABASE_URL to PostgreSQL and REDIS_URL: the bench runs a real worker.")

    with scratch_database():
        run_with_worker(args)


def run_with_worker(args: argparse.Namespace) -> None:
    """The timed runs, with a worker of this run's own queue."""
    queue = f"bench-batches-{uuid.uuid4().hex}"
    app.conf.task_default_queue = queue
    app.conf.task_always_eager = False
    worker = start_worker(queue)
    try:
        print(f"Seeding a custodian with {args.payers} payer accounts ({connection.vendor}, one worker)...")
        user, accounts = seed(args.payers)
        verify_seconds, submit_seconds, process_seconds = timed_run(user, accounts, args.items)
        print(
            f"verify of {args.items} items (request until every item checked): {verify_seconds:.2f} s, "
            f"{args.items / verify_seconds:.0f} items/s"
        )
        print(
            f"submit request (step-up, batch and {args.items} items written): {submit_seconds:.2f} s, "
            f"{args.items / submit_seconds:.0f} items/s"
        )
        print(
            f"processing of {args.items} items (answer until every payer funded and item paid): "
            f"{process_seconds:.2f} s, {args.items / process_seconds:.0f} items/s"
        )
        worker.terminate()
        worker.wait(timeout=30)
        verify_queries, process_queries = counted_run(user, accounts, args.items)
        print(
            f"queries per item: verify {verify_queries / args.items:.4f} ({verify_queries} queries), "
            f"processing {process_queries / args.items:.4f} ({process_queries} queries)"
        )
        assert ledger_check().ok, "ledger invariant broken"
        print("ledger check: ok")
    finally:
        if worker.poll() is None:
            worker.terminate()
            worker.wait(timeout=30)


if __name__ == "__main__":
    main()
