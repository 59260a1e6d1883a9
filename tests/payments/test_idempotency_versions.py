"""A payment's Idempotency-Key record keeps its fingerprint in the domain's
names with a version; a record written before (the body's names, no version)
still replays for a retry of its request and refuses another request."""

import uuid
from decimal import Decimal

from bankapi.models import IdempotencyRecord
from payments.models import PaymentRequest
from tests.payments.conftest import balance
from tests.payments.test_idempotency import body_for, pay


def _as_written_before(key, account, beneficiary) -> None:
    """The record as the code wrote it before fingerprints had a version."""
    IdempotencyRecord.objects.filter(key=key).update(
        fingerprint={"amount": "10.00", "accountId": str(account.id), "beneficiaryId": str(beneficiary.id)}
    )


def test_a_new_record_keeps_a_versioned_fingerprint_in_domain_names(api, customer_auth, account, beneficiary):
    key = uuid.uuid4()

    assert pay(api, customer_auth, account, body_for(beneficiary), key).status_code == 200

    assert IdempotencyRecord.objects.get(key=key).fingerprint == {
        "version": 1,
        "fields": {"amount": "10.00", "account_id": str(account.id), "beneficiary_id": str(beneficiary.id)},
    }


def test_a_retry_of_a_request_recorded_before_replays_its_answer(api, customer_auth, account, beneficiary):
    key = uuid.uuid4()
    first = pay(api, customer_auth, account, body_for(beneficiary), key)
    _as_written_before(key, account, beneficiary)

    retry = pay(api, customer_auth, account, body_for(beneficiary, amount="10.0"), key)

    assert retry.status_code == 200, retry.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert retry.content == first.content
    assert PaymentRequest.objects.count() == 1
    assert balance(account) == Decimal("99990.00")


def test_another_request_with_a_key_recorded_before_is_still_refused(
    api, customer_auth, account, beneficiary
):
    key = uuid.uuid4()
    pay(api, customer_auth, account, body_for(beneficiary), key)
    _as_written_before(key, account, beneficiary)

    other = pay(api, customer_auth, account, body_for(beneficiary, amount="10.01"), key)

    assert (other.status_code, other.json()["code"]) == (400, "IDEMPOTENCY_KEY_MISMATCH")
    assert PaymentRequest.objects.count() == 1
