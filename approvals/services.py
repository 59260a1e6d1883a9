"""Approving, rejecting and expiring held requests.

approve checks, in this order: an approval the caller may not see is 404
(`approvals.selectors.approval_of`); its initiator approving it is 403; one
not PENDING_APPROVAL (an expired one reads EXPIRED at once), or a user who
already approved it, is 409 INVALID_STATE; a method the policy does not allow
(TOTP under passkeyRequired, PIN always) is 422 NOT_SUPPORTED; then the
credential, through the authn step-up (outside any transaction: a wrong TOTP
code stays counted in the second-factor lockout; a passkey session is spent
when its assertion verifies, and only then). The signature is then recorded
with the approval's row locked, its state checked again: of two approvals
racing to complete the count, one runs the request and the other is 409.
"""

import os
import uuid
from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals.events import approval_event, approval_events
from approvals.execution import approval_run
from approvals.models import Approval, ApprovalSignature
from approvals.selectors import approval_of, status_now
from authn.models import User
from authn.services.stepup import (
    Confirmation,
    PasskeyConfirmation,
    PasskeyStepUp,
    PinConfirmation,
    TotpConfirmation,
    step_up_confirm,
    step_up_passkey_challenge,
)
from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode
from bankapi.scope import Scope, program_for
from events.models import EventType

STEP_UP_PURPOSE = "approval"
NONCE_BYTES = 16


def _not_pending() -> ApiError:
    return ApiError(ErrorCode.INVALID_STATE, "This approval is no longer pending.")


def _already() -> ApiError:
    return ApiError(ErrorCode.INVALID_STATE, "You have already approved this request.")


def _approver_checks(approval: Approval, user: User) -> None:
    """403 for its initiator, 409 when it is not pending or the user approved it."""
    if approval.initiator_id == user.id:
        raise ApiError(ErrorCode.FORBIDDEN, "The initiator of a request cannot approve it.")
    if status_now(approval) != Approval.Status.PENDING_APPROVAL:
        raise _not_pending()
    if any(signature.user_id == user.id for signature in approval.signatures.all()):
        raise _already()


def approval_challenge(*, scope: Scope, user: User, approval_id: str) -> PasskeyStepUp:
    """A passkey session bound to this approval and user (5 minutes, single use)
    whose WebAuthn challenge is the 32 bytes of the content hash then 16 random bytes."""
    approval = approval_of(scope, approval_id)
    _approver_checks(approval, user)
    challenge = bytes.fromhex(approval.content_hash) + os.urandom(NONCE_BYTES)
    return step_up_passkey_challenge(
        user=user, purpose=STEP_UP_PURPOSE, bound_to=str(approval.id), challenge=challenge
    )


def _method_allowed(approval: Approval, confirmation: Confirmation) -> None:
    if isinstance(confirmation, PinConfirmation):
        raise ApiError(
            ErrorCode.NOT_SUPPORTED, "A PIN cannot approve; use a passkey or, where allowed, TOTP."
        )
    if isinstance(confirmation, TotpConfirmation) and approval.passkey_required:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "This policy requires a passkey to approve.")


def _stored_assertion(confirmation: Confirmation) -> dict[str, str] | None:
    if not isinstance(confirmation, PasskeyConfirmation):
        return None
    assertion = confirmation.assertion
    return {
        "credentialId": assertion.credential_id,
        "authenticatorData": assertion.authenticator_data,
        "clientDataJSON": assertion.client_data_json,
        "signature": assertion.signature,
    }


def approval_approve(*, scope: Scope, user: User, approval_id: str, confirmation: Confirmation) -> Approval:
    approval = approval_of(scope, approval_id)
    _approver_checks(approval, user)
    _method_allowed(approval, confirmation)
    step_up_confirm(
        user=user,
        program=program_for(scope),
        confirmation=confirmation,
        purpose=STEP_UP_PURPOSE,
        bound_to=str(approval.id),
    )
    now = customer_now(approval.customer_id)
    with transaction.atomic():
        locked = Approval.objects.select_for_update().get(pk=approval.pk)
        if status_now(locked) != Approval.Status.PENDING_APPROVAL:
            raise _not_pending()
        if locked.signatures.filter(user_id=user.id).exists():
            raise _already()
        ApprovalSignature.objects.create(
            approval=locked,
            user=user,
            method=ApprovalSignature.Method.PASSKEY
            if isinstance(confirmation, PasskeyConfirmation)
            else ApprovalSignature.Method.TOTP,
            approved_at=now,
            passkey=_stored_assertion(confirmation),
        )
        if locked.signatures.count() < locked.required:
            approval_event(_fresh(locked), EventType.APPROVAL_APPROVED)
            return _fresh(locked)
        approval_run(locked)
        locked.decided_at = now
        locked.save(
            update_fields=["status", "result", "error_code", "error_message", "decided_at", "updated_at"]
        )
        done = _fresh(locked)
        executed = locked.status == Approval.Status.EXECUTED
        approval_event(done, EventType.APPROVAL_EXECUTED if executed else EventType.APPROVAL_FAILED)
        return done


def _fresh(approval: Approval) -> Approval:
    return Approval.objects.prefetch_related("signatures").get(pk=approval.pk)


def approval_reject(*, scope: Scope, user: User, approval_id: str, reason: str) -> Approval:
    """Any of the customer's (or custodian's) users, its initiator included, may reject."""
    approval = approval_of(scope, approval_id)
    with transaction.atomic():
        locked = Approval.objects.select_for_update().get(pk=approval.pk)
        if status_now(locked) != Approval.Status.PENDING_APPROVAL:
            raise _not_pending()
        locked.status = Approval.Status.REJECTED
        locked.rejected_by = user
        locked.reject_reason = reason
        locked.decided_at = customer_now(locked.customer_id)
        locked.save(update_fields=["status", "rejected_by", "reject_reason", "decided_at", "updated_at"])
        done = _fresh(locked)
        approval_event(done, EventType.APPROVAL_REJECTED)
        return done


def _expire(approval_pk: uuid.UUID, now: datetime, *, at_once: bool) -> Approval | None:
    with transaction.atomic():
        locked = Approval.objects.select_for_update().get(pk=approval_pk)
        if locked.status != Approval.Status.PENDING_APPROVAL or (not at_once and locked.expires_at > now):
            return None
        locked.status = Approval.Status.EXPIRED
        locked.expires_at = min(locked.expires_at, now)
        locked.decided_at = now
        locked.save(update_fields=["status", "expires_at", "decided_at", "updated_at"])
        done = _fresh(locked)
        approval_event(done, EventType.APPROVAL_EXPIRED)
        return done


EXPIRE_CHUNK = 500


def approvals_expire(
    now: datetime | None = None, *, chunk_size: int = EXPIRE_CHUNK, clock_id: uuid.UUID | None = None
) -> int:
    """Mark EXPIRED every pending approval past its expiry at `now` (the beat
    task); how many. In sets: a chunk claimed with SKIP LOCKED (an approval
    being approved or rejected now is left to that decision, and expires on
    the next run if it is still pending), one UPDATE and one INSERT of events
    per chunk. Without `clock_id`, approvals of customers on a test clock are
    left to their clock; with it, only that clock's customers' are taken."""
    now = now or timezone.now()
    if clock_id is None:
        whose = Q(customer__isnull=True) | Q(customer__test_clock__isnull=True)
    else:
        whose = Q(customer__test_clock_id=clock_id)
    expired = 0
    while True:
        with transaction.atomic():
            chunk = list(
                Approval.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(whose, status=Approval.Status.PENDING_APPROVAL, expires_at__lte=now)
                .order_by("expires_at", "pk")
                .values_list("pk", flat=True)[:chunk_size]
            )
            Approval.objects.filter(pk__in=chunk).update(
                status=Approval.Status.EXPIRED, decided_at=now, updated_at=now
            )
            approval_events(
                list(Approval.objects.filter(pk__in=chunk).prefetch_related("signatures")),
                EventType.APPROVAL_EXPIRED,
            )
        expired += len(chunk)
        if len(chunk) < chunk_size:
            return expired


def approvals_expire_sweep(now: datetime, clock_id: uuid.UUID | None) -> int:
    """The approvals' expiry sweep as the test clocks' registry calls it
    (settings.SANDBOX_CLOCK_EXPIRY_SWEEPS): `clock_id` None is the real sweep
    (customers without a clock, at the real time), an id that clock's customers
    at the moment it reads."""
    return approvals_expire(now, clock_id=clock_id)


def approvals_expiring(clock_id: uuid.UUID, after: datetime, until: datetime) -> list[datetime]:
    """When the pending approvals of a clock's customers expire in `(after, until]`."""
    return list(
        Approval.objects.filter(
            customer__test_clock_id=clock_id,
            status=Approval.Status.PENDING_APPROVAL,
            expires_at__gt=after,
            expires_at__lte=until,
        )
        .values_list("expires_at", flat=True)
        .distinct()
    )


# An advance of a test clock runs the sweep at each of these moments.
approvals_expire_sweep.due_times = approvals_expiring  # type: ignore[attr-defined]


def approval_expire_now(*, scope: Scope, approval_id: str) -> Approval:
    """The sandbox's expire: a pending approval becomes EXPIRED at once (409 otherwise)."""
    if not scope.sandbox:
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Approval not found")
    approval = approval_of(scope, approval_id)
    expired = _expire(approval.pk, customer_now(approval.customer_id), at_once=True)
    if expired is None:
        raise _not_pending()
    return expired
