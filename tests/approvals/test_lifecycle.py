"""Schedules, expiry, lists, the policy route, the idempotency key's replay,
events and the metric of held requests."""

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from approvals.models import Approval
from approvals.tasks import expire_approvals
from bankapi.models import Account
from events.models import Event
from payments.models import PaymentRequest, ScheduledPayment
from payments.services.schedules import utc_today
from tests.approvals.conftest import approve_totp, business_make, pay


def held_id(api, business, amount="1500.00", **fields) -> str:
    answer = pay(api, business, amount, **fields)
    assert answer.status_code == 202, answer.content
    return answer.json()["data"]["approvalId"]


def test_a_schedule_exists_only_once_approved(api, business):
    later = (utc_today() + timedelta(days=10)).isoformat()
    approval_id = held_id(api, business, scheduledDate=later, frequency="MONTHLY")
    approval = Approval.objects.get(id=approval_id)
    assert approval.kind == "schedule"
    assert approval.content["scheduledDate"] == later and approval.content["frequency"] == "MONTHLY"
    assert not ScheduledPayment.objects.exists()
    done = approve_totp(api, business.approvers[0], approval_id).json()["data"]
    assert done["status"] == "EXECUTED"
    schedule = ScheduledPayment.objects.get(id=done["result"]["scheduleId"])
    assert schedule.amount == Decimal("1500.00")
    assert not PaymentRequest.objects.exists()


def test_an_expired_approval_reads_expired_at_once_and_never_runs(api, business):
    approval_id = held_id(api, business)
    Approval.objects.filter(id=approval_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    read = api.get(f"/v1/approvals/{approval_id}", **business.approvers[0].access).json()["data"]
    assert read["status"] == "EXPIRED"
    assert approve_totp(api, business.approvers[0], approval_id).status_code == 409
    assert expire_approvals.apply().get() == 1
    assert Approval.objects.get(id=approval_id).status == "EXPIRED"
    assert Event.objects.filter(type="approval.expired", resource_id=approval_id).count() == 1
    assert expire_approvals.apply().get() == 0
    assert Account.objects.get(id=business.account.id).balance == Decimal("100000.00")


def test_the_beat_schedule_runs_the_expiry():
    assert "approvals.tasks.expire_approvals" in {
        entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }


def test_expires_after_the_policys_hours(api, business):
    business.policy.expires_after_hours = 2
    business.policy.save()
    before = timezone.now()
    approval = Approval.objects.get(id=held_id(api, business))
    assert before + timedelta(hours=2) <= approval.expires_at <= timezone.now() + timedelta(hours=2)


def test_the_sandbox_expires_it_now(api, business):
    approval_id = held_id(api, business)
    url = f"/v1/sandbox/approvals/{approval_id}/expire"
    answer = api.post(url, **business.approvers[0].access)
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["status"] == "EXPIRED"
    assert api.post(url, **business.approvers[0].access).status_code == 409


def test_the_sandbox_expiry_is_404_in_production(api, db):
    business = business_make()
    approval_id = held_id(api, business)
    Approval.objects.filter(id=approval_id).update(sandbox=False)
    business.initiator.user.__class__.objects.filter(id=business.approvers[0].user.id).update(sandbox=False)
    answer = api.post(f"/v1/sandbox/approvals/{approval_id}/expire", **business.approvers[0].access)
    assert answer.status_code in (401, 404)
    assert Approval.objects.get(id=approval_id).status == "PENDING_APPROVAL"


def test_the_list_is_newest_first_paginated_and_filtered(api, business):
    ids = [held_id(api, business, f"{1000 + n}.00") for n in range(3)]
    Approval.objects.filter(id=ids[0]).update(status="REJECTED")
    auth = business.approvers[0].access
    first = api.get("/v1/approvals", {"limit": 2}, **auth).json()["data"]
    assert [row["approvalId"] for row in first["approvals"]] == [ids[2], ids[1]]
    second = api.get("/v1/approvals", {"limit": 2, "nextToken": first["nextToken"]}, **auth).json()["data"]
    assert [row["approvalId"] for row in second["approvals"]] == [ids[0]] and second["nextToken"] is None
    rejected = api.get("/v1/approvals", {"status": "REJECTED"}, **auth).json()["data"]["approvals"]
    assert [row["approvalId"] for row in rejected] == [ids[0]]
    assert api.get("/v1/approvals", {"status": "NOPE"}, **auth).status_code == 400
    outsider = business_make().approvers[0]
    assert api.get("/v1/approvals", **outsider.access).json()["data"]["approvals"] == []


def test_the_policy_route(api, business):
    answer = api.get("/v1/approval-policy", **business.approvers[0].access)
    assert answer.status_code == 200
    assert answer.json()["data"] == {
        "tiers": [{"minAmount": "1000.00", "approvers": 1}, {"minAmount": "5000.00", "approvers": 2}],
        "expiresAfterHours": 168,
        "passkeyRequired": False,
    }
    nobody = business_make()
    nobody.policy.delete()
    empty = api.get("/v1/approval-policy", **nobody.initiator.access).json()["data"]
    assert empty == {"tiers": [], "expiresAfterHours": 168, "passkeyRequired": True}


def test_the_idempotency_key_replays_the_202(api, business):
    key = str(uuid.uuid4())
    first = pay(api, business, "1500.00", headers={**business.initiator.access, "HTTP_IDEMPOTENCY_KEY": key})
    again = pay(api, business, "1500.00", headers={**business.initiator.access, "HTTP_IDEMPOTENCY_KEY": key})
    assert first.status_code == again.status_code == 202
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert Approval.objects.count() == 1


def test_events_of_each_step_are_the_customers(api, business):
    approval_id = held_id(api, business)
    approve_totp(api, business.approvers[0], approval_id)
    listed = api.get("/v1/events", {"type": "approval.executed"}, **business.initiator.access).json()["data"]
    assert [event["data"]["approvalId"] for event in listed["events"]] == [approval_id]
    assert listed["events"][0]["data"]["status"] == "EXECUTED"
    types = set(Event.objects.filter(resource_id=approval_id).values_list("type", flat=True))
    assert types == {"approval.requested", "approval.executed"}
    assert all(
        event.customer_id == business.customer.id for event in Event.objects.filter(resource_id=approval_id)
    )


def pending_count(api) -> float:
    text = api.get("/metrics").content.decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "bankapi_payments_total" and sample.labels == {"outcome": "pending_approval"}:
                return sample.value
    raise AssertionError("no pending_approval series")


def test_a_held_request_counts_as_pending_approval(api, business, django_capture_on_commit_callbacks):
    before = pending_count(api)
    with django_capture_on_commit_callbacks(execute=True):
        held_id(api, business)
    assert pending_count(api) == before + 1


@pytest.mark.parametrize("amount", ["1500.00"])
def test_a_quote_funded_payment_and_a_transfer_are_not_held(api, business, amount):
    # International transfers (and quote-funded payments) are never held: their quote lives 30 seconds.
    from bankapi.approval_gate import HoldRequest  # noqa: F401 - documents where the rule lives
    from payments.approval_content import payment_hold_request
    from payments.services.acceptance import PaymentInstruction

    instruction = PaymentInstruction(
        amount=Decimal(amount), currency="GBP", reference="x", quote_id=uuid.uuid4()
    )
    held = payment_hold_request(
        account=business.account,
        user_id=business.initiator.user.id,
        instruction=instruction,
        beneficiary_id=None,
        inline_payee=None,
        scheduled_date=None,
        frequency="NEVER",
    )
    assert held is None
