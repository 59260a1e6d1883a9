"""Approving with a passkey: the assertion signs the content hash and a nonce,
and only this approval's session and challenge are taken."""

import base64
import hashlib
import json
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from approvals.canonical import content_hash
from approvals.models import Approval
from authn.models import AuthChallenge
from authn.services.challenges import Kind
from bankapi.models import Account
from payments.models import PaymentRequest
from tests.approvals.conftest import business_make, pay
from tests.conftest import requires_postgres
from tests.support.passkeys import enrol_passkey
from tests.support.race import run_at_once


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def open_challenge(api, person, approval_id: str) -> dict:
    answer = api.post(f"/v1/approvals/{approval_id}/challenge", format="json", **person.access)
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]


def passkey_body(opened: dict, authenticator) -> dict:
    return {
        "confirmation": {
            "method": "passkey",
            "passkeySession": opened["passkeySession"],
            "assertion": authenticator.get(opened["fido2options"]),
        }
    }


def approve(api, person, approval_id: str, body: dict):
    return api.post(f"/v1/approvals/{approval_id}/approve", body, format="json", **person.access)


@pytest.fixture
def strict(db):
    return business_make(passkey_required=True)


def test_the_challenge_is_the_content_hash_then_a_16_byte_nonce(api, strict):
    approver = strict.approvers[0]
    enrol_passkey(api, approver.email, str(approver.program_id))
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    first = unb64(open_challenge(api, approver, held)["fido2options"]["challenge"])
    second = unb64(open_challenge(api, approver, held)["fido2options"]["challenge"])
    approval = Approval.objects.get(id=held)
    assert len(first) == 48
    assert first[:32] == bytes.fromhex(approval.content_hash) == bytes.fromhex(content_hash(approval.content))
    assert first[:32] == second[:32] and first[32:] != second[32:]


def test_approved_with_a_passkey_stores_the_assertion_anyone_can_check(api, strict):
    approver = strict.approvers[0]
    authenticator = enrol_passkey(api, approver.email, str(approver.program_id))
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    body = passkey_body(open_challenge(api, approver, held), authenticator)
    answer = approve(api, approver, held, body)
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["status"] == "EXECUTED"
    signed = data["approvals"][0]
    assert signed["method"] == "passkey" and signed["userId"] == str(approver.user.id)
    client_data = json.loads(unb64(signed["passkey"]["clientDataJSON"]))
    assert unb64(client_data["challenge"])[:32] == bytes.fromhex(data["contentHash"])
    assert (
        data["contentHash"]
        == hashlib.sha256(
            json.dumps(data["content"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        ).hexdigest()
    )
    assert signed["passkey"]["signature"] == body["confirmation"]["assertion"]["signatureB64"]
    assert Account.objects.get(id=strict.account.id).balance == Decimal("98500.00")


def test_an_assertion_made_for_another_approvals_challenge_is_refused(api, strict):
    approver = strict.approvers[0]
    authenticator = enrol_passkey(api, approver.email, str(approver.program_id))
    first = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    second = pay(api, strict, "1600.00").json()["data"]["approvalId"]
    opened_first = open_challenge(api, approver, first)
    opened_second = open_challenge(api, approver, second)
    # The second approval's session with an assertion over the first's challenge.
    forged = {
        "confirmation": {
            "method": "passkey",
            "passkeySession": opened_second["passkeySession"],
            "assertion": authenticator.get(opened_first["fido2options"]),
        }
    }
    answer = approve(api, approver, second, forged)
    assert answer.status_code == 401
    assert answer.json()["code"] == "INVALID_CREDENTIALS"
    # The first approval's session and assertion, sent to the second approval.
    answer = approve(api, approver, second, passkey_body(opened_first, authenticator))
    assert answer.status_code == 401
    assert Approval.objects.get(id=second).status == "PENDING_APPROVAL"
    assert not PaymentRequest.objects.filter(account=strict.account).exists()
    # Neither session was spent by a failed assertion: the first still approves its own.
    assert approve(api, approver, first, passkey_body(opened_first, authenticator)).status_code == 200


def test_the_session_is_bound_to_its_user(api, strict):
    one, other = strict.approvers[0], strict.approvers[1]
    authenticator = enrol_passkey(api, one.email, str(one.program_id))
    enrol_passkey(api, other.email, str(other.program_id))
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    body = passkey_body(open_challenge(api, one, held), authenticator)
    assert approve(api, other, held, body).status_code == 401


def test_a_spent_session_does_not_approve_twice(api, strict):
    strict.policy.tiers = [{"minAmount": "1000.00", "approvers": 2}]
    strict.policy.save()
    approver = strict.approvers[0]
    authenticator = enrol_passkey(api, approver.email, str(approver.program_id))
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    opened = open_challenge(api, approver, held)
    assert approve(api, approver, held, passkey_body(opened, authenticator)).status_code == 200
    assert approve(api, approver, held, passkey_body(opened, authenticator)).status_code == 409
    assert (
        AuthChallenge.objects.filter(
            user=approver.user, kind=Kind.STEP_UP_PASSKEY, used_at__isnull=False
        ).count()
        == 1
    )


def test_without_a_passkey_the_challenge_is_422(api, strict):
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    answer = api.post(f"/v1/approvals/{held}/challenge", **strict.approvers[0].access)
    assert answer.status_code == 422


def test_the_initiator_gets_no_challenge(api, strict):
    enrol_passkey(api, strict.initiator.email, str(strict.initiator.program_id))
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    assert api.post(f"/v1/approvals/{held}/challenge", **strict.initiator.access).status_code == 403


@requires_postgres
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_approvers_of_a_one_approver_tier_execute_it_once():
    business = business_make(passkey_required=True)
    client = APIClient()
    approvers = business.approvers[:2]
    authenticators = [enrol_passkey(client, person.email, str(person.program_id)) for person in approvers]
    held = pay(client, business, "1500.00").json()["data"]["approvalId"]
    bodies = [
        passkey_body(open_challenge(client, person, held), authenticator)
        for person, authenticator in zip(approvers, authenticators, strict=True)
    ]

    def approve_one(index: int):
        answer = approve(APIClient(), approvers[index], held, bodies[index])
        return answer.status_code, answer.json()

    answers = run_at_once(2, approve_one)
    assert sorted(status for status, _ in answers) == [200, 409]
    assert PaymentRequest.objects.filter(account=business.account).count() == 1
    assert Account.objects.get(id=business.account.id).balance == Decimal("98500.00")
    approval = Approval.objects.get(id=held)
    assert approval.status == "EXECUTED" and approval.signatures.count() == 1


def test_the_session_lives_five_minutes(api, strict):
    from datetime import timedelta

    from django.utils import timezone

    approver = strict.approvers[0]
    authenticator = enrol_passkey(api, approver.email, str(approver.program_id))
    held = pay(api, strict, "1500.00").json()["data"]["approvalId"]
    opened = open_challenge(api, approver, held)
    session = AuthChallenge.objects.get(user=approver.user, kind=Kind.STEP_UP_PASSKEY, used_at__isnull=True)
    assert timedelta(minutes=4) < session.expires_at - timezone.now() <= timedelta(minutes=5)
    AuthChallenge.objects.filter(id=session.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = approve(api, approver, held, passkey_body(opened, authenticator))
    assert answer.status_code == 401
    assert Approval.objects.get(id=held).status == "PENDING_APPROVAL"
