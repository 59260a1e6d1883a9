"""Duplicates of one submit sent at once (same idempotencyKey), against
PostgreSQL, one connection per request: they behave as one submit. The key is
claimed before the scaChallenge or the confirmation is looked at, so every
duplicate answers the first answer or 409, and none of them spends or counts a
credential."""

import uuid
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from authn.models import LoginThrottle, User
from bankapi.models import IdempotencyRecord
from batches.models import Batch, ScaChallenge
from batches.rules import payments_hash, sent_payment_from_wire
from batches.services.submit import OPERATION
from tests.batches.conftest import URL, balance, payment
from tests.batches.test_submit import initiate, submit, totp, wrong_totp
from tests.conftest import requires_postgres
from tests.support.passkeys import enrol_passkey
from tests.support.race import run_at_once

DUPLICATES = 20


def _totp(api, auth, user: User, sca: dict, program_id: str) -> dict:
    return totp(user)


def _passkey(api, auth, user: User, sca: dict, program_id: str) -> dict:
    authenticator = enrol_passkey(api, user.email, program_id)
    session = api.post(URL, {"action": "passkey-challenge", "scaChallenge": sca}, format="json", **auth)
    assert session.status_code == 200, session.json()
    data = session.json()["data"]
    return {
        "method": "passkey",
        "passkeySession": data["passkeySession"],
        "assertion": authenticator.get(data["fido2options"]),
    }


def _second_factor_failures(user: User) -> int:
    row = LoginThrottle.objects.filter(
        factor=LoginThrottle.Factor.SECOND_FACTOR, program_id=user.program_id, email=user.email
    ).first()
    return row.failures if row else 0


@pytest.mark.django_db
def test_a_duplicate_of_a_submit_in_flight_is_a_409_and_its_code_is_not_checked(custodian_setup):
    # Given a submit whose key is held by the first copy, still running
    user, auth = custodian_setup.user, custodian_setup.person.access
    program_id = user.program_id
    payments = [payment(custodian_setup.accounts[0], "10.00")]
    api = APIClient()
    sca = initiate(api, auth, payments)
    key = uuid.uuid4()
    IdempotencyRecord.objects.create(
        program_id=program_id,
        sandbox=True,
        owner_kind=IdempotencyRecord.OwnerKind.CUSTODIAN,
        owner_id=user.custodian_id,
        operation=OPERATION,
        key=key,
        fingerprint={"payments": payments_hash([sent_payment_from_wire(p) for p in payments], None)},
        claimed_at=timezone.now(),
    )

    # When a copy arrives with a code the first copy has already spent (here: a wrong one)
    response = submit(api, auth, payments, sca, wrong_totp(user), idempotencyKey=str(key))

    # Then it is told to wait, and nothing of it was checked, counted or spent
    assert response.status_code == 409, response.json()
    assert response.json()["code"] == "IDEMPOTENCY_KEY_IN_PROGRESS"
    assert _second_factor_failures(user) == 0
    assert ScaChallenge.objects.get(id=sca["id"]).consumed_at is None
    assert not Batch.objects.exists()


@requires_postgres
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("confirm", [_totp, _passkey], ids=["totp", "passkey"])
def test_twenty_duplicate_submits_at_once_make_one_batch_and_count_no_wrong_code(custodian_setup, confirm):
    # Given a custodian with a live scaChallenge and a confirmation for it
    user, auth = custodian_setup.user, custodian_setup.person.access
    program_id = user.program_id
    payer = custodian_setup.accounts[0]
    before = balance(payer.id)
    payments = [payment(payer, "10.00")]
    api = APIClient()
    sca = initiate(api, auth, payments)
    body = {
        "action": "submit",
        "payments": payments,
        "scaChallenge": sca,
        "confirmation": confirm(api, auth, user, sca, program_id),
        "idempotencyKey": str(uuid.uuid4()),
    }

    # When twenty copies of the submit arrive at once
    def send(_):
        response = APIClient().post(URL, body, format="json", **auth)
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    results = run_at_once(DUPLICATES, send)

    # Then one batch is made, every answer is its answer or "still in progress",
    # and no duplicate was taken for a wrong code
    batch = Batch.objects.get()
    originals = [r for r in results if r[0] == 200 and r[2] is None]
    assert len(originals) == 1
    for status, answer, replayed in results:
        assert status in (200, 409), answer
        if status == 200:
            assert answer["data"]["batchId"] == str(batch.id)
            assert replayed in (None, "true")
        else:
            assert answer["code"] == "IDEMPOTENCY_KEY_IN_PROGRESS"
    assert _second_factor_failures(user) == 0
    assert balance(payer.id) == before - Decimal("10.00")
    assert IdempotencyRecord.objects.get().state == IdempotencyRecord.State.COMPLETED
    # And a duplicate sent afterwards answers the first answer again
    again = APIClient().post(URL, body, format="json", **auth)
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json()["data"]["batchId"] == str(batch.id)
