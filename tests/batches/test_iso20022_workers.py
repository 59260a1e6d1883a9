"""ISO 20022 files on PostgreSQL (and Redis with a real Celery worker): uploads of
one MsgId racing make one draft, and a 10,000-transaction file goes from upload
to a paid batch and its pain.002. Skipped on the embedded default."""

import time
import uuid
from decimal import Decimal

import pyotp
import pytest
from rest_framework.test import APIClient

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account, Custodian, Customer, Program
from bankapi.roles import Role
from batches.models import Batch, BatchItem, Draft
from bench.pain001 import V09, large_file, scan
from payments.ledger import ledger_check
from payments.models import PaymentRequest
from tests.batches.conftest import URL
from tests.batches.iso20022 import report, statuses, upload
from tests.conftest import requires_postgres, requires_redis
from tests.support.factories import funded_account
from tests.support.race import run_at_once
from tests.support.worker import celery_workers

PAYERS = 10


def _custodian_with_payers(count: int) -> tuple[User, list[Account]]:
    program = Program.objects.create(name=f"ISO test {uuid.uuid4()}", account_type="consumer")
    custodian = Custodian.objects.create(program=program, name="ISO Custodian")
    payers = [
        funded_account(
            Customer.objects.create(program=program, name=f"Client {index}", custodian=custodian),
            "100000.00",
            sort_code="400000",
            account_number=f"{index:08d}",
        )
        for index in range(count)
    ]
    user = User.objects.create(
        email="iso.custodian@example.com",
        program=program,
        role=Role.CUSTODIAN,
        custodian=custodian,
        totp_secret=pyotp.random_base32(),
        totp_confirmed=True,
    )
    return user, payers


def _auth(user: User) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(user).access_token}"}


def _debtors(payers: list[Account]) -> list[dict]:
    return [scan(payer.sort_code, payer.account_number) for payer in payers]


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_of_one_msgid_make_one_draft(transactional_db):
    user, payers = _custodian_with_payers(2)
    auth = _auth(user)
    body = large_file(_debtors(payers), 20, msg_id="RACE-1")
    assert upload(APIClient(), auth, b"").status_code == 400
    answers = run_at_once(4, lambda _: upload(APIClient(), auth, body))

    assert sorted(answer.status_code for answer in answers) == [200, 409, 409, 409]
    draft = Draft.objects.get()
    assert draft.message_id == "RACE-1"
    made = next(answer for answer in answers if answer.status_code == 200).json()["requestId"]
    assert str(draft.id) == made
    for answer in answers:
        if answer.status_code == 409:
            assert answer.json()["code"] == "DUPLICATE_MESSAGE" and answer.json()["batchId"] == made


def _wait(predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for the worker")


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_a_10000_transaction_file_is_verified_paid_and_reported_by_a_worker(transactional_db):
    user, payers = _custodian_with_payers(PAYERS)
    auth = _auth(user)
    client = APIClient()
    body = large_file(_debtors(payers), 10_000, version=V09, msg_id="BULK-10000")

    with celery_workers("iso20022") as workers:
        workers.start()
        uploaded = upload(client, auth, body)
        assert uploaded.status_code == 200, uploaded.json()
        draft_id = uploaded.json()["requestId"]
        _wait(lambda: Draft.objects.filter(id=draft_id, verified_at__isnull=False).exists(), timeout=300)
        assert statuses(report(client, auth, draft_id))["group"] == "ACTC"

        initiated = client.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **auth)
        assert initiated.status_code == 200, initiated.json()
        assert initiated.json()["data"]["totalAmount"] == "10000.00"
        confirmation = {"method": "totp", "code": pyotp.TOTP(user.totp_secret).now()}
        submitted = client.post(
            URL,
            {
                "action": "submit",
                "batchId": draft_id,
                "scaChallenge": initiated.json()["data"]["scaChallenge"],
                "confirmation": confirmation,
            },
            format="json",
            **auth,
        )
        assert submitted.status_code == 200, submitted.json()
        _wait(lambda: Batch.objects.get(id=draft_id).status in Batch.FINAL, timeout=600)

    batch = Batch.objects.get(id=draft_id)
    assert batch.status == Batch.Status.COMPLETED
    assert BatchItem.objects.filter(batch=batch, status="SUCCESS").count() == 10_000
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 10_000
    for payer in payers:
        assert Account.objects.get(id=payer.id).balance == Decimal("100000.00") - Decimal("1000.00")
    assert ledger_check().ok
    paid = statuses(report(client, auth, draft_id, "pain.002.001.12"))
    assert (paid["group"], paid["messageId"], paid["messageName"]) == ("ACSC", "BULK-10000", V09)
    transactions = [t for _, entries in paid["instructions"] for t in entries]
    assert len(transactions) == 10_000 and {t[1] for t in transactions} == {"ACSC"}
    assert BatchItem.objects.get(batch=batch, index=0).end_to_end_id == "E2E-0-0"
