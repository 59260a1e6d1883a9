"""Batches under real concurrency (PostgreSQL) and a real Celery worker killed
mid-batch (PostgreSQL and Redis). Skipped on the embedded default."""

import os
import signal
import subprocess
import sys
import time
import uuid
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import connection

from authn.models import User
from bankapi.models import Account, Custodian, Customer, Program
from bankapi.roles import Role
from batches.models import Batch, BatchItem
from batches.services.processing import batch_process
from config.celery import app
from payments.ledger import ledger_check
from payments.models import PaymentRequest
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.conftest import requires_postgres, requires_redis
from tests.support.factories import funded_account
from tests.support.race import run_at_once

PAYERS = 10


def _custodian_with_payers(count: int) -> tuple[User, list[Account]]:
    program = Program.objects.create(name=f"Worker test {uuid.uuid4()}", account_type="consumer")
    custodian = Custodian.objects.create(program=program, name="Worker Custodian")
    payers = []
    for index in range(count):
        customer = Customer.objects.create(program=program, name=f"Client {index}", custodian=custodian)
        payers.append(
            funded_account(customer, "100000.00", sort_code="400000", account_number=f"{index:08d}")
        )
    user = User.objects.create(
        email="worker.custodian@example.com", program=program, role=Role.CUSTODIAN, custodian=custodian
    )
    return user, payers


def _paid_exactly_once(batch: Batch, payers: list[Account], amount_each: Decimal, items: int) -> None:
    assert batch.status == "COMPLETED"
    assert BatchItem.objects.filter(batch=batch, status="SUCCESS").count() == items
    requests = PaymentRequest.objects.filter(batch_item__batch=batch)
    assert requests.count() == items
    assert PaymentRequest.objects.filter(account__in=payers).count() == items
    per_payer = items // len(payers)
    for payer in payers:
        assert Account.objects.get(id=payer.id).balance == Decimal("100000.00") - amount_each * per_payer
    assert ledger_check().ok


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_runners_at_once_pay_every_item_exactly_once(transactional_db):
    user, payers = _custodian_with_payers(4)
    batch = batch_submitted(user, [payment(payers[n % 4], "1.00") for n in range(200)])
    # A runner that raises fails the race with its exception.
    run_at_once(3, lambda _: batch_process(str(batch.id), chunk_size=7))
    batch.refresh_from_db()
    _paid_exactly_once(batch, payers, Decimal("1.00"), 200)


def _database_url() -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def _worker(queue: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        # Small chunks, so the worker is surely killed halfway through.
        "BATCH_CHUNK_SIZE": "10",
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
    return subprocess.Popen(command, cwd=settings.BASE_DIR, env=env)


@pytest.fixture
def worker_queue():
    """A queue of this test's own; tasks go to it through Redis while it runs."""
    queue = f"test-batches-{uuid.uuid4().hex}"
    previous = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    app.conf.task_always_eager = False
    workers: list[subprocess.Popen] = []
    try:
        yield queue, workers
    finally:
        app.conf.task_default_queue = previous
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()


def _wait(predicate, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_leaves_every_item_paid_exactly_once(transactional_db, worker_queue):
    queue, workers = worker_queue
    user, payers = _custodian_with_payers(PAYERS)
    workers.append(_worker(queue))

    # Submitting queues the processing after commit, to the worker's queue.
    batch = batch_submitted(user, [payment(payers[n % PAYERS], "1.00") for n in range(1000)])
    paid = BatchItem.objects.filter(batch=batch, status="SUCCESS")
    assert _wait(lambda: paid.count() >= 100, timeout=120), "the worker never started paying"
    os.kill(workers[0].pid, signal.SIGKILL)
    workers[0].wait(timeout=20)

    halfway = paid.count()
    assert 100 <= halfway < 1000, "the worker finished before it was killed"
    assert Batch.objects.get(id=batch.id).status == "PROCESSING"

    # A new worker; the beat sweep (run at once here) queues the stalled batch again.
    workers.append(_worker(queue))
    app.send_task("batches.tasks.resume_stalled_batches", kwargs={"older_than_seconds": 0}, queue=queue)
    assert _wait(lambda: Batch.objects.get(id=batch.id).status in Batch.FINAL, timeout=180, step=0.25)

    batch.refresh_from_db()
    _paid_exactly_once(batch, payers, Decimal("1.00"), 1000)
    assert len(set(BatchItem.objects.filter(batch=batch).values_list("payment_id", flat=True))) == 1000


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_submits_racing_with_one_challenge_make_one_batch(transactional_db):
    from rest_framework.test import APIClient

    from authn.services.stepup import step_up_pin_set
    from tests.support.auth import access_header

    program = Program.objects.create(
        name="Race program", account_type="business", pin_confirmation_enabled=True
    )
    customer = Customer.objects.create(program=program, name="Racer Ltd")
    account = funded_account(customer, "100.00", sort_code="500000", account_number="00000001")
    user = User.objects.create(
        email="racer@example.com", program=program, role=Role.CUSTOMER, customer=customer
    )
    step_up_pin_set(user=user, pin="2468")
    auth = access_header(user.email, str(program.id))
    payments = [payment(account, "60.00")]
    initiate = APIClient().post(
        "/v1/batch-payments", {"action": "initiate", "payments": payments}, format="json", **auth
    )
    sca = initiate.json()["data"]["scaChallenge"]
    body = {
        "action": "submit",
        "payments": payments,
        "scaChallenge": sca,
        "confirmation": {"method": "pin", "pin": "2468"},
    }
    statuses = run_at_once(
        2, lambda _: APIClient().post("/v1/batch-payments", body, format="json", **auth).status_code
    )

    assert sorted(statuses) == [200, 400]
    assert Batch.objects.filter(owner_customer=customer).count() == 1
    assert Account.objects.get(id=account.id).balance == Decimal("40.00")
