"""Approvals expire in sets: a chunk claimed with SKIP LOCKED, one UPDATE and
one INSERT of events, whatever the chunk's size; each keeps its own event."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals.models import Approval
from approvals.services import approvals_expire
from events.models import Event
from tests.approvals.test_lifecycle import held_id


def expired_statements(api, business, count: int) -> int:
    ids = [held_id(api, business, amount="1500.00", reference=f"Held {n}") for n in range(count)]
    Approval.objects.filter(id__in=ids).update(expires_at=timezone.now() - timedelta(seconds=1))
    with CaptureQueriesContext(connection) as captured:
        assert approvals_expire() == count
    return len(captured)


def test_expiring_three_or_nine_costs_the_same_statements(api, business):
    assert expired_statements(api, business, 3) == expired_statements(api, business, 9)


def test_each_expired_approval_has_its_event_and_later_ones_stay_pending(api, business):
    due = [held_id(api, business, reference=f"Due {n}") for n in range(5)]
    later = held_id(api, business, reference="Later")
    Approval.objects.filter(id__in=due).update(expires_at=timezone.now() - timedelta(minutes=1))

    assert approvals_expire(chunk_size=2) == 5

    for approval_id in due:
        approval = Approval.objects.get(id=approval_id)
        assert approval.status == "EXPIRED" and approval.decided_at is not None
        event = Event.objects.get(type="approval.expired", resource_id=approval_id)
        assert event.data["status"] == "EXPIRED" and event.data["approvalId"] == approval_id
    assert Approval.objects.get(id=later).status == "PENDING_APPROVAL"
    assert approvals_expire() == 0
