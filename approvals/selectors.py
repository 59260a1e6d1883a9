"""Which approvals and policy a caller sees.

A customer's users see the approvals of their customer, a custodian's users
those of their custodian, in their program and environment (the rule
`bankapi.tenancy.OWNED_BY_PARTY`); nobody else's, which answer 404. A user
missing its party sees nothing.
"""

from typing import Any

from django.db.models import QuerySet

from approvals.models import Approval, ApprovalPolicy
from bankapi.clock import customer_now
from bankapi.scope import Scope, get_or_not_found
from bankapi.tenancy import OWNED_BY_PARTY


def _owned(rows: QuerySet[Any], scope: Scope) -> QuerySet[Any]:
    """The caller's party's rows (`bankapi.tenancy.OWNED_BY_PARTY`); none for other roles."""
    rule = OWNED_BY_PARTY.get(scope.role)
    return rows.none() if rule is None else rule.filter(rows, scope)


def approvals_of(scope: Scope) -> QuerySet[Approval]:
    return _owned(Approval.objects.all(), scope).prefetch_related("signatures")


def approval_of(scope: Scope, approval_id: str) -> Approval:
    """The caller's approval, or 404 (another customer's, custodian's or tenant's included)."""
    return get_or_not_found(approvals_of(scope), approval_id, "Approval")


def policy_of(scope: Scope) -> ApprovalPolicy | None:
    policy: ApprovalPolicy | None = _owned(ApprovalPolicy.objects.all(), scope).first()
    return policy


def status_now(approval: Approval) -> str:
    """Its status as of now: a pending approval past `expiresAt` reads EXPIRED at
    once, before the beat task marks it so."""
    if approval.status == Approval.Status.PENDING_APPROVAL and approval.expires_at <= customer_now(
        approval.customer_id
    ):
        return Approval.Status.EXPIRED
    return approval.status
