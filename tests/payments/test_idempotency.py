"""Idempotency-Key on payment creation."""

import json
import uuid
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from bankapi.models import IdempotencyRecord
from bankapi.tasks import purge_idempotency_records
from payments.models import PaymentRequest
from tests.payments.conftest import balance, payments_url


def pay(api, auth, account, body, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": str(key)} if key else {}
    return api.post(payments_url(account.customer_id, account.id), body, format="json", **headers, **auth)


def claim_left_behind(customer, key, fingerprint, claimed_at):
    """A payment claim as a request that is still running (or has crashed) leaves it."""
    return IdempotencyRecord.objects.create(
        program=customer.program,
        sandbox=customer.sandbox,
        owner_kind=IdempotencyRecord.OwnerKind.CUSTOMER,
        owner_id=customer.id,
        operation="payments.create",
        key=key,
        fingerprint=fingerprint,
        claimed_at=claimed_at,
    )


def body_for(beneficiary, **overrides):
    return {
        "amount": "10.00",
        "reference": "Invoice 7",
        "beneficiaryId": str(beneficiary.id),
    } | overrides


def test_a_retry_with_the_same_key_replays_the_first_answer_and_pays_once(
    api, customer_auth, account, beneficiary
):
    key = uuid.uuid4()

    first = pay(api, customer_auth, account, body_for(beneficiary), key)
    retry = pay(api, customer_auth, account, body_for(beneficiary), key)

    assert first.status_code == retry.status_code == 200
    assert retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert PaymentRequest.objects.count() == 1
    assert balance(account) == Decimal("99990.00")


def test_a_retry_whose_checks_would_now_refuse_still_answers_the_first_answer(
    api, customer_auth, account, beneficiary
):
    # A GBP payment to a UK payee must come from a GB virtual IBAN: a check made
    # once the body is read, on what is not part of the key's fingerprint.
    key = uuid.uuid4()
    refused_alone = pay(
        api, customer_auth, account, body_for(beneficiary, virtualIban="DE89370400440532013000")
    )
    first = pay(api, customer_auth, account, body_for(beneficiary), key)

    retry = pay(api, customer_auth, account, body_for(beneficiary, virtualIban="DE89370400440532013000"), key)

    assert refused_alone.status_code == 400
    assert (first.status_code, retry.status_code) == (200, 200)
    assert retry.content == first.content and retry["Idempotent-Replayed"] == "true"
    assert PaymentRequest.objects.count() == 1
    assert balance(account) == Decimal("99990.00")


def test_the_amount_is_compared_as_money_not_as_text(api, customer_auth, account, beneficiary):
    key = uuid.uuid4()

    pay(api, customer_auth, account, body_for(beneficiary, amount="10"), key)
    retry = pay(api, customer_auth, account, body_for(beneficiary, amount="10.00"), key)

    assert retry.status_code == 200 and retry["Idempotent-Replayed"] == "true"
    assert PaymentRequest.objects.count() == 1


def test_the_body_key_is_honoured_and_the_header_wins_over_it(api, customer_auth, account, beneficiary):
    header_key, body_key = uuid.uuid4(), uuid.uuid4()

    first = pay(api, customer_auth, account, body_for(beneficiary, idempotencyKey=str(body_key)), header_key)
    replay_by_body = pay(api, customer_auth, account, body_for(beneficiary, idempotencyKey=str(header_key)))
    fresh = pay(api, customer_auth, account, body_for(beneficiary), body_key)

    assert replay_by_body.json() == first.json() and replay_by_body["Idempotent-Replayed"] == "true"
    assert fresh.status_code == 200 and "Idempotent-Replayed" not in fresh
    assert PaymentRequest.objects.count() == 2
    assert set(IdempotencyRecord.objects.values_list("key", flat=True)) == {header_key, body_key}


def test_a_key_reused_for_another_payment_is_a_400_mismatch(
    api, customer, customer_auth, account, snapshot, short_reference_account, beneficiary
):
    from tests.support.factories import BeneficiaryFactory

    key = uuid.uuid4()
    pay(api, customer_auth, account, body_for(beneficiary), key)
    other_account = short_reference_account
    other_beneficiary = BeneficiaryFactory(customer=customer)
    before = snapshot()

    responses = [
        pay(api, customer_auth, account, body_for(beneficiary, amount="10.01"), key),
        pay(api, customer_auth, other_account, body_for(beneficiary), key),
        pay(api, customer_auth, account, body_for(beneficiary, beneficiaryId=str(other_beneficiary.id)), key),
    ]

    assert [r.status_code for r in responses] == [400, 400, 400]
    assert {r.json()["code"] for r in responses} == {"IDEMPOTENCY_KEY_MISMATCH"}
    assert before.unchanged()


def test_a_key_whose_first_request_is_still_running_is_a_409(
    api, customer, customer_auth, account, snapshot, beneficiary
):
    key = uuid.uuid4()
    claim_left_behind(
        customer,
        key,
        fingerprint={
            "amount": "10.00",
            "accountId": str(account.id),
            "beneficiaryId": str(beneficiary.id),
        },
        claimed_at=timezone.now() - timedelta(seconds=50),
    )
    before = snapshot()

    response = pay(api, customer_auth, account, body_for(beneficiary), key)

    assert (response.status_code, response.json()["code"]) == (409, "IDEMPOTENCY_KEY_IN_PROGRESS")
    assert before.unchanged()


def test_a_claim_left_for_over_a_minute_is_taken_over(api, customer, customer_auth, account, beneficiary):
    key = uuid.uuid4()
    claim_left_behind(
        customer,
        key,
        fingerprint={
            "amount": "10.00",
            "accountId": str(account.id),
            "beneficiaryId": str(beneficiary.id),
        },
        claimed_at=timezone.now() - timedelta(seconds=61),
    )

    response = pay(api, customer_auth, account, body_for(beneficiary), key)

    assert response.status_code == 200 and "Idempotent-Replayed" not in response
    assert PaymentRequest.objects.count() == 1
    record = IdempotencyRecord.objects.get(key=key)
    assert record.state == IdempotencyRecord.State.COMPLETED
    assert json.loads(bytes(record.response_body)) == response.json()


def test_a_request_stopped_before_acceptance_releases_its_key(api, customer_auth, low_account, beneficiary):
    low = low_account
    key = uuid.uuid4()

    refused = pay(api, customer_auth, low, body_for(beneficiary, amount="6.00"), key)
    assert IdempotencyRecord.objects.count() == 0
    retried = pay(api, customer_auth, low, body_for(beneficiary, amount="5.00"), key)

    assert refused.status_code == 422
    assert retried.status_code == 200 and "Idempotent-Replayed" not in retried
    assert balance(low) == Decimal("0.00")


def test_a_not_found_beneficiary_leaves_no_claim(api, customer_auth, account, beneficiary):
    response = pay(
        api, customer_auth, account, body_for(beneficiary, beneficiaryId=str(uuid.uuid4())), uuid.uuid4()
    )

    assert response.status_code == 404
    assert IdempotencyRecord.objects.count() == 0


def test_keys_are_scoped_to_the_customer(
    api, customer_auth, customer2_auth, account, beneficiary, customer2_account, customer2_beneficiary
):
    key = uuid.uuid4()

    mine = pay(api, customer_auth, account, body_for(beneficiary), key)
    theirs = pay(api, customer2_auth, customer2_account, body_for(customer2_beneficiary), key)

    assert mine.status_code == theirs.status_code == 200
    assert "Idempotent-Replayed" not in theirs
    assert PaymentRequest.objects.count() == 2


def test_keys_older_than_seven_days_are_purged_by_the_beat_task(customer):
    old = claim_left_behind(customer, uuid.uuid4(), fingerprint={}, claimed_at=timezone.now())
    IdempotencyRecord.objects.filter(id=old.id).update(
        created_at=timezone.now() - timedelta(days=7, seconds=1)
    )
    recent = claim_left_behind(customer, uuid.uuid4(), fingerprint={}, claimed_at=timezone.now())
    IdempotencyRecord.objects.filter(id=recent.id).update(created_at=timezone.now() - timedelta(days=6))

    purged = purge_idempotency_records.delay().get()

    assert purged == 1
    assert list(IdempotencyRecord.objects.values_list("id", flat=True)) == [recent.id]
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "bankapi.tasks.purge_idempotency_records" in tasks
