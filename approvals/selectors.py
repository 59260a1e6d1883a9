"""Which approvals and policy a caller sees.

A customer's users see the approvals of their customer, a custodian's users
those of their custodian (`for_scope` first: program and environment); nobody
else's, which answer 404. A user missing its party sees nothing.
"""

from django.db.models import Q, QuerySet
from django.utils import timezone

from approvals.models import Approval, ApprovalPolicy
from bankapi.roles import Role
from bankapi.scope import Scope, get_or_not_found


def _own(scope: Scope) -> Q:
    if scope.role == Role.CUSTODIAN and scope.custodian_id is not None:
        return Q(custodian_id=scope.custodian_id)
    if scope.role == Role.CUSTOMER and scope.customer_id is not None:
        return Q(customer_id=scope.customer_id)
    return Q(pk__in=[])


def approvals_of(scope: Scope) -> QuerySet[Approval]:
    return Approval.objects.for_scope(scope).filter(_own(scope)).prefetch_related("signatures")


def approval_of(scope: Scope, approval_id: str) -> Approval:
    """The caller's approval, or 404 (another customer's, custodian's or tenant's included)."""
    return get_or_not_found(approvals_of(scope), approval_id, "Approval")


def policy_of(scope: Scope) -> ApprovalPolicy | None:
    return ApprovalPolicy.objects.for_scope(scope).filter(_own(scope)).first()


def status_now(approval: Approval) -> str:
    """Its status as of now: a pending approval past `expiresAt` reads EXPIRED at
    once, before the beat task marks it so."""
    if approval.status == Approval.Status.PENDING_APPROVAL and approval.expires_at <= timezone.now():
        return Approval.Status.EXPIRED
    return approval.status
