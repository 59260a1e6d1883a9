"""The one point where a request that moves money meets its approval policy.

Routes that move money (a payment, a scheduled payment's creation, a batch
submit) describe what they are about to do as a `HoldRequest` and ask
`approval_needed`: None lets them go on as usual; a `Hold` means the policy of
the paying customer (or custodian) asks other users to approve it first, and
the route answers `approval_hold(hold)` (202 PENDING_APPROVAL, nothing moved)
instead of doing the work, in the transaction that would have done it.

The kernel knows no app: the policy lives in the app named by the setting
`APPROVAL_GATE` (an object with `needed` and `hold`), as the other app-provided
pieces are named in settings.
"""

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from bankapi.http.schema import envelope
from bankapi.idempotency import StoredResponse

PAYMENT = "payment"
SCHEDULE = "schedule"
BATCH = "batch"
KINDS = (PAYMENT, SCHEDULE, BATCH)


@dataclass(frozen=True)
class HoldRequest:
    """A request about to move money.

    `content` is what approvers sign (JSON: strings, null, objects, arrays);
    `totals` the amount per currency the policy's tiers are compared with;
    `replay` what running the request later needs (JSON). The policy is the
    custodian's when `custodian_id` is set, else the customer's.
    """

    kind: str
    program_id: uuid.UUID
    sandbox: bool
    initiator_id: uuid.UUID
    customer_id: uuid.UUID | None
    custodian_id: uuid.UUID | None
    content: dict[str, Any]
    totals: dict[str, Decimal]
    replay: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hold:
    """A request the policy holds: it needs `required` other users' approvals
    within `expires_after_hours`."""

    request: HoldRequest
    required: int
    expires_after_hours: int


class HeldSerializer(serializers.Serializer):
    """The 202 answer of a request held for approval (nothing moved)."""

    approvalId = serializers.UUIDField(help_text="Read it at GET /v1/approvals/{approvalId}.")
    status = serializers.ChoiceField(choices=["PENDING_APPROVAL"])
    # The metaclass takes declared fields off the class: this does not replace Field.required.
    required = serializers.IntegerField(  # type: ignore[assignment]
        help_text="How many other users of the customer (or custodian) must approve."
    )
    approved = serializers.IntegerField(help_text="Always 0 here.")
    expiresAt = serializers.DateTimeField(help_text="Past it the request never runs (EXPIRED).")


HELD_RESPONSE = OpenApiResponse(
    envelope("HeldForApprovalResponse", HeldSerializer()),
    description=(
        "PENDING_APPROVAL: the approval policy of the customer (or custodian) asks other users to "
        "approve this first; nothing moved. It runs, every rule checked again, when the last "
        "approval comes (POST /v1/approvals/{approvalId}/approve). Only where a policy applies; "
        "the Idempotency-Key replays this answer."
    ),
)


class Gate(Protocol):
    def needed(self, request: HoldRequest) -> Hold | None: ...

    def hold(self, hold: Hold) -> StoredResponse: ...


def _gate() -> Gate:
    gate: Gate = import_string(settings.APPROVAL_GATE)
    return gate


def approval_needed(request: HoldRequest) -> Hold | None:
    """Whether the policy holds this request (reads only; no transaction needed)."""
    return _gate().needed(request)


def approval_hold(hold: Hold) -> StoredResponse:
    """Record the approval the request waits for and answer 202 PENDING_APPROVAL.
    Call it inside the transaction that would have done the work (its idempotency
    key then replays this answer)."""
    return _gate().hold(hold)


def policy_owner_of_account(account: Any) -> tuple[uuid.UUID | None, uuid.UUID | None] | None:
    """Whose policy governs money leaving `account` (a `bankapi.models.Account`):
    (None, custodian id) for a custodian's customer, (customer id, None) for a
    customer of a business program, None when no policy can apply (a consumer
    program's own customer), so that most payments ask nothing more."""
    from bankapi.models import Customer, Program

    customer: Customer = account.customer
    if customer.custodian_id is not None:
        return None, customer.custodian_id
    program: Program = account.program
    if program.account_type == Program.AccountType.BUSINESS:
        return customer.id, None
    return None


# What a view that can move money declares as `approval_policy`: `COVERED` when
# its POST asks this gate before it moves anything, else `exempt(reason)`. A
# test finds every such route from the URL configuration and fails for one that
# declares neither (tests/approvals/test_route_coverage.py).
COVERED = "covered"


def exempt(reason: str) -> str:
    return f"exempt: {reason}"
