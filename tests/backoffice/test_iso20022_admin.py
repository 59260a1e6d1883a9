"""A batch made from an ISO 20022 file in the back office: found by its MsgId,
its items showing their EndToEndId; its events name the MsgId too."""

import pytest

from batches.models import Batch
from bench.pain001 import Instruction, Tx, pain001, scan
from events.models import Event
from tests.batches.conftest import URL
from tests.batches.iso20022 import upload
from tests.batches.test_submit import totp
from tests.support.factories import custodian_with_clients

pytestmark = pytest.mark.django_db


@pytest.fixture
def file_batch(client, program, django_capture_on_commit_callbacks) -> Batch:
    from rest_framework.test import APIClient

    custodian = custodian_with_clients(program)
    auth = custodian.person.access
    first = custodian.accounts[0]
    body = pain001(
        [
            Instruction(
                scan(first.sort_code, first.account_number),
                [Tx("ADMIN-E2E-1", "1.00", scan("200000", "55779911"))],
            )
        ],
        msg_id="ADMIN-MSG-1",
    )
    api = APIClient()
    with django_capture_on_commit_callbacks(execute=True):
        draft_id = upload(api, auth, body).json()["requestId"]
    sca = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **auth).json()["data"][
        "scaChallenge"
    ]
    user = custodian.user
    with django_capture_on_commit_callbacks(execute=True):
        submitted = api.post(
            URL,
            {"action": "submit", "batchId": draft_id, "scaChallenge": sca, "confirmation": totp(user)},
            format="json",
            **auth,
        )
    assert submitted.status_code == 200, submitted.json()
    return Batch.objects.get(id=draft_id)


def test_the_admin_finds_a_batch_by_its_msgid_and_shows_end_to_end_ids(staff_client, file_batch):
    client = staff_client("administrator")

    found = client.get("/admin/batches/batch/", {"q": "ADMIN-MSG-1"})
    other = client.get("/admin/batches/batch/", {"q": "ADMIN-MSG-2"})
    items = client.get("/admin/batches/batchitem/", {"q": str(file_batch.id)})

    assert [batch.id for batch in found.context["cl"].result_list] == [file_batch.id]
    assert list(other.context["cl"].result_list) == []
    assert b"ADMIN-E2E-1" in items.content


def test_the_batchs_events_name_its_msgid(file_batch):
    event = Event.objects.get(resource_type="batch", resource_id=str(file_batch.id), type="batch.completed")

    assert event.data["messageId"] == "ADMIN-MSG-1"
