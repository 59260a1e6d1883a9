"""An application create's key record: a versioned fingerprint in the domain's
names; one written before (the body's names, no version) still replays for the
same request and refuses another."""

import uuid

from bankapi.models import IdempotencyRecord
from onboarding.models import Application

NEW_APPLICATION = "/v1/applications"


def _create(api, token, key, is_company=False):
    return api.post(
        NEW_APPLICATION, {"isCompany": is_company}, format="json", HTTP_IDEMPOTENCY_KEY=key, **token
    )


def test_a_record_written_before_versions_replays_and_refuses_another_request(api, customer_id_token):
    key = str(uuid.uuid4())
    first = _create(api, customer_id_token, key)
    record = IdempotencyRecord.objects.get(key=key)
    assert record.fingerprint == {"version": 1, "fields": {"is_company": False, "email": None}}
    IdempotencyRecord.objects.filter(id=record.id).update(fingerprint={"isCompany": False, "email": None})
    before = Application.objects.count()

    again = _create(api, customer_id_token, key)
    other = _create(api, customer_id_token, key, is_company=True)

    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert (other.status_code, other.json()["code"]) == (400, "IDEMPOTENCY_KEY_MISMATCH")
    assert Application.objects.count() == before
