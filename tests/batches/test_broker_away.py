"""Redis (the Celery broker) away: work a request committed answers the success
it earned, the failed publish is one log line, and the beat sweep runs the work."""

import logging

import pytest
from prometheus_client.parser import text_string_to_metric_families

from batches.models import Batch, Draft
from batches.tasks import resume_stalled_batches
from config.celery import app
from tests.batches.conftest import URL, payment
from tests.batches.test_submit import initiate, submit, totp
from tests.support.broker import broker_away  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


def publish_failures(api) -> float:
    text = api.get("/metrics").content.decode()
    (family,) = (f for f in text_string_to_metric_families(text) if f.name == "bankapi_task_publish_failures")
    return family.samples[0].value


@pytest.mark.usefixtures("broker_away")
def test_verify_and_submit_answer_their_success_and_the_sweep_runs_the_work(
    api, custodian_auth, custodian_user, custodian_accounts, caplog
):
    payments = [payment(custodian_accounts[0], "10.00"), payment(custodian_accounts[1], "5.00")]
    failures = publish_failures(api)
    caplog.set_level(logging.INFO)

    verified = api.post(URL, {"action": "verify", "payments": payments}, format="json", **custodian_auth)
    sca = initiate(api, custodian_auth, payments)
    submitted = submit(api, custodian_auth, payments, sca, totp(custodian_user))

    # The draft and the batch committed: each answered as without the outage, once.
    assert verified.status_code == 200, verified.content
    assert submitted.status_code == 200, submitted.content
    assert Draft.objects.filter(id=verified.json()["requestId"], verified_at__isnull=True).count() == 1
    batch_id = submitted.json()["data"]["batchId"]
    assert Batch.objects.get(id=batch_id).status == Batch.Status.CREATED
    # Each failed publish counted; one concise line, no traceback.
    assert publish_failures(api) - failures == 2
    assert not [record for record in caplog.records if record.exc_info]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    lines = [line for line in warnings if "not queued" in line]
    assert len(lines) == 1 and "the sweep will run it" in lines[0], lines

    # Redis back: the beat sweep finds the unverified draft and the unprocessed batch.
    app.conf.task_always_eager = True
    assert resume_stalled_batches(0) == {"drafts": 1, "batches": 1}
    assert Draft.objects.get(id=verified.json()["requestId"]).verified_at is not None
    assert Batch.objects.get(id=batch_id).status == Batch.Status.COMPLETED
