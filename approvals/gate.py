"""The approval policy behind `bankapi.approval_gate` (settings.APPROVAL_GATE)."""

from datetime import timedelta

from django.db import transaction

from approvals.canonical import content_hash
from approvals.events import approval_event
from approvals.models import Approval, ApprovalPolicy
from approvals.serializers import held_data
from bankapi.approval_gate import Hold, HoldRequest
from bankapi.clock import customer_now
from bankapi.idempotency import StoredResponse
from bankapi.ops.metrics import PAYMENTS
from events.models import EventType


def policy_for(request: HoldRequest) -> ApprovalPolicy | None:
    rows = ApprovalPolicy.objects.filter(program_id=request.program_id, sandbox=request.sandbox)
    if request.custodian_id is not None:
        return rows.filter(custodian_id=request.custodian_id).first()
    if request.customer_id is not None:
        return rows.filter(customer_id=request.customer_id).first()
    return None


class ApprovalGate:
    def needed(self, request: HoldRequest) -> Hold | None:
        policy = policy_for(request)
        if policy is None:
            return None
        required = policy.required_for(request.totals)
        if not required:
            return None
        return Hold(request=request, required=required, expires_after_hours=policy.expires_after_hours)

    def hold(self, hold: Hold) -> StoredResponse:
        request = hold.request
        policy = policy_for(request)
        now = customer_now(None if request.custodian_id else request.customer_id)
        approval = Approval.objects.create(
            program_id=request.program_id,
            sandbox=request.sandbox,
            kind=request.kind,
            customer_id=None if request.custodian_id else request.customer_id,
            custodian_id=request.custodian_id,
            initiator_id=request.initiator_id,
            required=hold.required,
            passkey_required=policy.passkey_required if policy is not None else True,
            content=request.content,
            content_hash=content_hash(request.content),
            replay=request.replay,
            expires_at=now + timedelta(hours=hold.expires_after_hours),
        )
        approval_event(approval, EventType.APPROVAL_REQUESTED)
        transaction.on_commit(lambda: PAYMENTS.labels(outcome="pending_approval").inc())
        return StoredResponse.rendered(202, {"success": True, "data": held_data(approval)})


GATE = ApprovalGate()
