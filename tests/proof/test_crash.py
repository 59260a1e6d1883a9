"""Crash tests: payments while gunicorn workers and the Celery worker are SIGKILLed.

Real processes on the test database (PostgreSQL) and Redis: gunicorn with three
workers on a free port, one Celery worker on a queue of its own settling
payments. Eight clients keep paying, each with an Idempotency-Key, and retry a
key whose answer they did not get (a broken connection, a 5xx, a 409 while the
first attempt's claim stands), and now and then retry a key already answered.
Meanwhile a killer SIGKILLs a random web worker every couple of seconds (the
master starts a new one) and the Celery worker every few kills (restarted).

Afterwards, with every key retried until answered:
- every key paid exactly once: one payment request per key, none without a key;
- every retry of an answered key answered the same requestId, marked replayed;
- the account went down by exactly the keys' amounts; every payment settled
  once (one settlement posting each); `ledger_check` holds.

Figures are printed. Bounded: CRASH_SECONDS of chaos (default 30).
"""

import http.client
import os
import random
import threading
import time
import uuid
from collections import Counter
from decimal import Decimal

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account, Customer, Program
from payments.ledger import ledger_check, ledger_fund_account
from payments.models import LedgerTransaction, PaymentRequest
from payments.services.settlement import payments_settle_pending
from tests.conftest import requires_redis
from tests.proof.conftest import report_figures
from tests.proof.processes import CeleryWorker, Gunicorn, kill, request, server_environment
from tests.support.factories import custodian_with_clients

CHAOS_SECONDS = float(os.environ.get("CRASH_SECONDS", "30"))
CLIENTS = 8
WEB_WORKERS = 3
STALE_CLAIM_SECONDS = 3
PAYEE = {"name": "Crash Payee", "account": {"type": "uk", "sortCode": "040004", "accountNumber": "12345678"}}


def _production_customer(program: Program) -> tuple[Account, str]:
    """A production customer (the settlement task settles production payments) with
    a large balance, and its access token."""
    customer = Customer.objects.create(program=program, sandbox=False, name="Crash Customer")
    account = Account.objects.create(
        program=program, sandbox=False, customer=customer, name="Crash GBP", currency="GBP"
    )
    ledger_fund_account(account, Decimal("1000000.00"), key=f"crash:{account.id}")
    user = User.objects.create(
        email=f"crash-{uuid.uuid4().hex[:6]}@example.com",
        program=program,
        sandbox=False,
        customer=customer,
    )
    return account, tokens_issue(user).access_token


class Clients:
    """What the clients sent and what they were told, per Idempotency-Key."""

    def __init__(self, port: int, account: Account, token: str):
        self.port = port
        self.path = f"/v1/customers/{account.customer_id}/accounts/{account.id}/payments"
        self.token = token
        self.lock = threading.Lock()
        self.bodies: dict[str, dict] = {}
        self.answered: dict[str, str] = {}  # key -> requestId of its first answer
        self.unanswered: set[str] = set()
        self.outcomes: Counter = Counter()
        self.mismatches: list[str] = []

    def send(self, key: str) -> None:
        headers = {"Authorization": f"Bearer {self.token}", "Idempotency-Key": key}
        try:
            status, response_headers, body = request(self.port, "POST", self.path, self.bodies[key], headers)
        except (OSError, http.client.HTTPException):
            self.record(key, "connection broken", None)
            return
        if status == 200:
            request_id = body["data"]["bankTransfer"]["requestId"]
            replayed = response_headers.get("Idempotent-Replayed") == "true"
            self.record(key, "200 replayed" if replayed else "200 new", request_id)
        elif status == 409 and body.get("code") == "IDEMPOTENCY_KEY_IN_PROGRESS":
            self.record(key, "409 in progress", None)
        else:
            self.record(key, f"{status} {body.get('code') if isinstance(body, dict) else body}", None)

    def record(self, key: str, outcome: str, request_id: str | None) -> None:
        with self.lock:
            self.outcomes[outcome] += 1
            if request_id is None:
                if key not in self.answered:
                    self.unanswered.add(key)
                return
            first = self.answered.setdefault(key, request_id)
            if first != request_id:
                self.mismatches.append(f"{key}: {first} then {request_id}")
            self.unanswered.discard(key)

    def new_key(self, rng: random.Random) -> str:
        key = str(uuid.uuid4())
        with self.lock:
            self.bodies[key] = {
                "amount": f"{rng.randrange(1, 5000) / 100:.2f}",
                "reference": "Crash test",
                "payee": PAYEE,
            }
        return key

    def pick(self, rng: random.Random) -> str:
        with self.lock:
            unanswered, answered = list(self.unanswered), list(self.answered)
        roll = rng.random()
        if unanswered and roll < 0.5:
            return rng.choice(unanswered)
        if answered and roll < 0.6:
            return rng.choice(answered)
        return self.new_key(rng)

    def run(self, index: int, until: float) -> None:
        rng = random.Random(index)
        while time.monotonic() < until:
            self.send(self.pick(rng))


def _chaos(web: Gunicorn, worker: CeleryWorker, until: float, kills: Counter) -> None:
    rng = random.Random(99)
    round_ = 0
    while time.monotonic() < until:
        time.sleep(rng.uniform(1.5, 3.0))
        round_ += 1
        workers = web.workers()
        if workers and kill(rng.choice(workers)):
            kills["gunicorn worker"] += 1
        if round_ % 3 == 0:
            worker.kill_and_restart()
            kills["celery worker"] += 1


def _settler(queue: str, until: float) -> None:
    from config.celery import app

    while time.monotonic() < until:
        app.send_task("payments.tasks.settle_pending_payments", queue=queue)
        time.sleep(1)


@requires_redis
def test_payments_survive_sigkilled_web_and_celery_workers(transactional_db, program, tmp_path):
    from config.celery import app

    app.conf.task_always_eager = False  # the autouse fixture restores it
    account, token = _production_customer(program)
    opening = Account.objects.get(id=account.id).balance
    env = server_environment(IDEMPOTENCY_STALE_CLAIM_SECONDS=str(STALE_CLAIM_SECONDS))
    web = Gunicorn(env, WEB_WORKERS, tmp_path / "gunicorn.log")
    worker = CeleryWorker(env, tmp_path / "celery.log")
    clients = Clients(web.port, account, token)
    kills: Counter = Counter()
    try:
        started = time.monotonic()
        until = started + CHAOS_SECONDS
        threads = [threading.Thread(target=clients.run, args=(index, until)) for index in range(CLIENTS)]
        threads += [
            threading.Thread(target=_chaos, args=(web, worker, until, kills)),
            threading.Thread(target=_settler, args=(worker.queue, until)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        chaos_requests = sum(clients.outcomes.values())

        # Every key not yet answered is retried until it is (a claim left by a
        # killed worker is taken over after STALE_CLAIM_SECONDS).
        web.wait_ready()
        deadline = time.monotonic() + 60
        while clients.unanswered and time.monotonic() < deadline:
            for key in list(clients.unanswered):
                clients.send(key)
            time.sleep(0.5)
        assert not clients.unanswered, f"{len(clients.unanswered)} keys never answered"
        # Every answered key once more: the same requestId, replayed.
        replays = Counter()
        for key, request_id in list(clients.answered.items()):
            status, headers, body = request(
                web.port,
                "POST",
                clients.path,
                clients.bodies[key],
                {"Authorization": f"Bearer {token}", "Idempotency-Key": key},
            )
            assert status == 200 and body["data"]["bankTransfer"]["requestId"] == request_id
            replays[headers.get("Idempotent-Replayed")] += 1
        # The live worker settles what is left.
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline
            and PaymentRequest.objects.filter(account=account, status=PaymentRequest.Status.PENDING).exists()
        ):
            app.send_task("payments.tasks.settle_pending_payments", queue=worker.queue)
            time.sleep(1)
        settled_by_worker = PaymentRequest.objects.filter(account=account, settled_at__isnull=False).count()
    finally:
        web.stop()
        worker.stop()
    payments_settle_pending(sandbox=False)  # whatever the worker did not reach in time

    payments = PaymentRequest.objects.filter(account=account)
    keys = clients.answered
    assert clients.mismatches == []
    assert replays == Counter({"true": len(keys)})
    assert payments.count() == len(keys), "a key paid twice, or a payment without an answered key"
    assert set(map(str, payments.values_list("id", flat=True))) == set(keys.values())
    paid = sum(Decimal(clients.bodies[key]["amount"]) for key in keys)
    assert Account.objects.get(id=account.id).balance == opening - paid
    assert payments.exclude(status=PaymentRequest.Status.SETTLED).count() == 0
    settlements = LedgerTransaction.objects.filter(
        kind=LedgerTransaction.Kind.SETTLEMENT,
        key__in=[f"settle:{request_id}" for request_id in keys.values()],
    )
    assert settlements.count() == len(keys)
    report = ledger_check()
    assert report.ok, report
    assert kills["gunicorn worker"] >= 3 and kills["celery worker"] >= 2, kills

    report_figures(
        "crash test: payments under SIGKILL (gunicorn + Celery, PostgreSQL + Redis)",
        "\n".join(
            [
                f"{CHAOS_SECONDS:.0f} s of chaos, {CLIENTS} clients, {WEB_WORKERS} gunicorn workers: "
                f"{kills['gunicorn worker']} web workers and {kills['celery worker']} Celery workers "
                "SIGKILLed",
                f"{chaos_requests} requests during the chaos, {sum(clients.outcomes.values())} in all; "
                "outcomes: "
                + ", ".join(f"{name} {count}" for name, count in sorted(clients.outcomes.items())),
                f"{len(keys)} keys, {len(keys)} answered, {payments.count()} payments: each key paid once; "
                f"{len(keys)} final retries all replayed the same requestId; 0 mismatches",
                f"balance {opening} -> {Account.objects.get(id=account.id).balance} (paid {paid}); "
                f"{settled_by_worker} settled by the Celery worker, "
                f"{settlements.count()} settlement postings; ledger balanced",
            ]
        ),
    )


BATCH_ITEMS = 1200
BATCH_URL = "/v1/batch-payments"


def _batch_payments(accounts: list[dict]) -> list[dict]:
    payee = {
        "name": "Batch Payee",
        "account": {"type": "uk", "sortCode": "040004", "accountNumber": "87654321"},
    }
    return [
        {
            "payer": {
                "account": {
                    "type": "uk",
                    "sortCode": accounts[index % len(accounts)]["sortCode"],
                    "accountNumber": accounts[index % len(accounts)]["accountNumber"],
                }
            },
            "payee": payee,
            "reference": f"Crash {index}",
            "amount": f"{1 + index % 7}.{index % 100:02d}",
        }
        for index in range(BATCH_ITEMS)
    ]


def _retrying(port: int, method: str, path: str, body: dict | None, headers: dict, until: float):
    """A request repeated while its worker dies under it (connection broken or 5xx)."""
    while True:
        try:
            status, _, answer = request(port, method, path, body, headers)
            if status < 500:
                return status, answer
        except (OSError, http.client.HTTPException):
            pass
        assert time.monotonic() < until, f"{method} {path} never answered"
        time.sleep(0.3)


@requires_redis
def test_a_batch_survives_sigkilled_web_and_celery_workers(transactional_db, program, tmp_path):
    """A custodian's batch submitted through gunicorn and paid by the Celery worker,
    while both are SIGKILLed; the beat sweep's task re-drives the stalled batch.
    Every valid item is paid exactly once, each payer pays exactly its items' total."""
    import pyotp

    from batches.models import Batch, BatchItem
    from config.celery import app

    app.conf.task_always_eager = False  # the autouse fixture restores it
    custodian = custodian_with_clients(program)
    user = custodian.user
    headers = {"Authorization": f"Bearer {tokens_issue(user).access_token}"}
    accounts = [
        {"accountId": str(a.id), "sortCode": a.sort_code, "accountNumber": a.account_number}
        for a in custodian.accounts
    ]
    opening = {entry["accountId"]: Account.objects.get(id=entry["accountId"]).balance for entry in accounts}
    payments = _batch_payments(accounts)
    env = server_environment()
    web = Gunicorn(env, WEB_WORKERS, tmp_path / "gunicorn.log")
    worker = CeleryWorker(env, tmp_path / "celery.log")
    kills: Counter = Counter()
    try:
        until = time.monotonic() + 120
        status, answer = _retrying(
            web.port, "POST", BATCH_URL, {"action": "initiate", "payments": payments}, headers, until
        )
        assert status == 200, answer
        body = {
            "action": "submit",
            "payments": payments,
            "scaChallenge": answer["data"]["scaChallenge"],
            "confirmation": {"method": "totp", "code": pyotp.TOTP(user.totp_secret).now()},
            "idempotencyKey": str(uuid.uuid4()),
        }
        status, answer = _retrying(web.port, "POST", BATCH_URL, body, headers, until)
        assert status == 200, answer
        batch_id = answer["data"]["batchId"]
        started = time.monotonic()
        rng = random.Random(5)
        polls = 0
        while time.monotonic() < until:
            time.sleep(rng.uniform(1.0, 2.5))
            if kills["celery worker"] < 4:
                worker.kill_and_restart()
                kills["celery worker"] += 1
            workers = web.workers()
            if workers and kills["gunicorn worker"] < 8 and kill(rng.choice(workers)):
                kills["gunicorn worker"] += 1
            # What beat's sweep does: queue again a batch whose worker died.
            app.send_task(
                "batches.tasks.resume_stalled_batches", kwargs={"older_than_seconds": 2}, queue=worker.queue
            )
            status, answer = _retrying(web.port, "GET", f"{BATCH_URL}/{batch_id}", None, headers, until)
            polls += 1
            if answer["data"]["status"] in Batch.FINAL:
                break
        elapsed = time.monotonic() - started
    finally:
        web.stop()
        worker.stop()

    batch = Batch.objects.get(id=batch_id)
    items = BatchItem.objects.filter(batch=batch)
    assert batch.status == Batch.Status.COMPLETED, batch.status
    assert items.count() == BATCH_ITEMS
    assert items.filter(status=BatchItem.Status.SUCCESS, payment__isnull=False).count() == BATCH_ITEMS
    paid = PaymentRequest.objects.filter(batch_item__batch=batch)
    assert paid.count() == BATCH_ITEMS, "an item paid twice or not at all"
    for entry in accounts:
        spent = sum(
            (
                Decimal(p["amount"])
                for i, p in enumerate(payments)
                if i % len(accounts) == accounts.index(entry)
            ),
            Decimal("0"),
        )
        fees = sum(paid.filter(account_id=entry["accountId"]).values_list("fee", flat=True), Decimal("0"))
        assert (
            Account.objects.get(id=entry["accountId"]).balance == opening[entry["accountId"]] - spent - fees
        )
    report = ledger_check()
    assert report.ok, report
    assert kills["celery worker"] >= 2, kills

    report_figures(
        "crash test: a batch under SIGKILL (gunicorn + Celery, PostgreSQL + Redis)",
        "\n".join(
            [
                f"batch of {BATCH_ITEMS} items over {len(accounts)} payer accounts: {batch.status} "
                f"{elapsed:.1f} s after submit, {polls} status polls",
                f"{kills['celery worker']} Celery workers and {kills['gunicorn worker']} web workers "
                "SIGKILLed during processing; the stalled batch was re-driven by resume_stalled_batches",
                f"{items.filter(status=BatchItem.Status.SUCCESS).count()} items SUCCESS, "
                f"{paid.count()} payment requests (one per item), payers' balances down by exactly "
                "their items; ledger balanced",
            ]
        ),
    )
