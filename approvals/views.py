"""Approval routes: the policy, the list, one approval, and what its users do with it."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view

from approvals.selectors import approval_of, approvals_of, policy_of
from approvals.serializers import (
    STATUSES,
    ApprovalListSerializer,
    ApprovalPolicySerializer,
    ApprovalSerializer,
    ApproveInputSerializer,
    RejectInputSerializer,
    approval_data,
    policy_data,
)
from approvals.services import (
    approval_approve,
    approval_challenge,
    approval_expire_now,
    approval_reject,
)
from authn.serializers import StepUpPasskeyChallengeSerializer, confirmation_of, passkey_step_up_data
from bankapi.approval_gate import exempt
from bankapi.errors import validation_error
from bankapi.http.api import PAGE_PARAMETERS, CursorListView, ScopedAPIView
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body

TAGS = ["approvals"]
S404 = "RESOURCE_NOT_FOUND: no approval of the caller's customer or custodian has this id."
S409 = (
    "INVALID_STATE: the approval is not PENDING_APPROVAL (an expired one reads EXPIRED), or you approved it."
)
APPROVAL_RESPONSE = envelope("ApprovalResponse", ApprovalSerializer())


class ApprovalPolicyView(ScopedAPIView):
    @extend_schema(
        tags=TAGS,
        summary="The approval policy of the caller's customer or custodian",
        description=(
            "Which payments, schedules and batch submits wait for other users' approval. Without "
            "a policy: `{tiers: [], expiresAfterHours: 168, passkeyRequired: true}` (nothing waits). "
            "Edited in the back office."
        ),
        responses={
            200: envelope("ApprovalPolicyResponse", ApprovalPolicySerializer()),
            **error_responses(401, 403),
        },
    )
    def get(self, request) -> HttpResponse:
        return ok(policy_data(policy_of(self.scope)))


STATUS_PARAMETER = OpenApiParameter(
    "status",
    {"type": "string", "enum": STATUSES},
    OpenApiParameter.QUERY,
    required=False,
    description="Only approvals with this status (a pending one past expiresAt is listed as stored "
    "until the expiry task, within a minute, marks it EXPIRED).",
)


@extend_schema_view(
    get=extend_schema(
        tags=TAGS,
        operation_id="approvals_list",
        summary="Approvals of the caller's customer or custodian",
        description="Newest first, cursor paginated.",
        parameters=[STATUS_PARAMETER, *PAGE_PARAMETERS],
        responses={
            200: envelope("ApprovalListResponse", ApprovalListSerializer()),
            **error_responses(400, 401, 403),
        },
    )
)
class ApprovalListView(CursorListView):
    serializer = ApprovalListSerializer
    items_key = "approvals"

    def rows(self):
        rows = approvals_of(self.scope)
        status = self.request.query_params.get("status")
        if status is not None and status != "":
            if status not in STATUSES:
                raise validation_error("status", f"Must be one of: {', '.join(STATUSES)}.")
            rows = rows.filter(status=status)
        return rows


class ApprovalView(ScopedAPIView):
    @extend_schema(
        tags=TAGS,
        summary="One approval, with what was signed",
        description=(
            "Its content and contentHash (recompute it: SHA-256 of the content's RFC 8785 canonical "
            "JSON), every approval given (a passkey's assertion as sent), and once decided what "
            "the request made (`result`) or why it failed (`error`)."
        ),
        responses={200: APPROVAL_RESPONSE, **error_responses(401, 403, 404, s404=S404)},
    )
    def get(self, request, approvalId: str) -> HttpResponse:
        return ok(approval_data(approval_of(self.scope, approvalId)))


class ApprovalChallengeView(ScopedAPIView):
    approval_policy = exempt("moves nothing")

    @extend_schema(
        tags=TAGS,
        summary="Open a passkey approval",
        description=(
            "A passkey session bound to this approval and the caller (single use, 5 minutes) and the "
            "WebAuthn request options. The challenge is 48 bytes: the 32 bytes of contentHash, then "
            "a 16-byte random nonce, so the assertion signs exactly this content."
        ),
        request=None,
        responses={
            200: envelope("ApprovalPasskeyChallengeResponse", StepUpPasskeyChallengeSerializer()),
            **error_responses(
                401,
                403,
                404,
                409,
                422,
                s403="FORBIDDEN: the initiator cannot approve its own request.",
                s404=S404,
                s409=S409,
                s422="NOT_SUPPORTED: the caller has no passkey.",
            ),
        },
    )
    def post(self, request, approvalId: str) -> HttpResponse:
        step_up = approval_challenge(scope=self.scope, user=request.user, approval_id=approvalId)
        return ok(passkey_step_up_data(step_up))


class ApprovalApproveView(ScopedAPIView):
    approval_policy = exempt("runs a request the gate held, once its approvals are complete")

    @extend_schema(
        tags=TAGS,
        summary="Approve a held request",
        description=(
            "Another user of the same customer or custodian approves, with a passkey (the session of "
            "this approval's challenge and its assertion) or, where the policy does not require a "
            "passkey, a TOTP code. Checks in order: 404, initiator 403, not pending or already "
            "approved 409, method not allowed 422, credential 401 (a wrong TOTP code counts towards "
            "the second-factor lockout: 429). The approval that completes the count runs the "
            "request now, every money rule checked again: 200 with status EXECUTED and `result`, "
            "or FAILED and `error` (nothing moved)."
        ),
        request=ApproveInputSerializer,
        responses={
            200: APPROVAL_RESPONSE,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                422,
                429,
                s401="INVALID_CREDENTIALS: wrong code, or an assertion or session not for this approval.",
                s403="FORBIDDEN: the initiator cannot approve its own request.",
                s404=S404,
                s409=S409,
                s422="NOT_SUPPORTED: TOTP where the policy requires a passkey, or a PIN (never taken).",
            ),
        },
    )
    def post(self, request, approvalId: str) -> HttpResponse:
        approval_of(self.scope, approvalId)  # 404 before the body is read
        body = validated_body(ApproveInputSerializer, request)
        approval = approval_approve(
            scope=self.scope,
            user=request.user,
            approval_id=approvalId,
            confirmation=confirmation_of(body["confirmation"]),
        )
        return ok(approval_data(approval))


class ApprovalRejectView(ScopedAPIView):
    approval_policy = exempt("moves nothing")

    @extend_schema(
        tags=TAGS,
        summary="Reject a held request",
        description="Any user of the customer or custodian, its initiator included. Ends it REJECTED.",
        request=RejectInputSerializer,
        responses={
            200: APPROVAL_RESPONSE,
            **error_responses(400, 401, 403, 404, 409, s404=S404, s409=S409),
        },
    )
    def post(self, request, approvalId: str) -> HttpResponse:
        approval_of(self.scope, approvalId)
        body = validated_body(RejectInputSerializer, request)
        approval = approval_reject(
            scope=self.scope, user=request.user, approval_id=approvalId, reason=body["reason"]
        )
        return ok(approval_data(approval))


class SandboxApprovalExpireView(ScopedAPIView):
    approval_policy = exempt("moves nothing")

    @extend_schema(
        tags=["sandbox"],
        summary="Sandbox: expire a pending approval now",
        description="Sandbox tokens only (404 for production). As if its expiresAt had passed.",
        request=None,
        responses={
            200: APPROVAL_RESPONSE,
            **error_responses(401, 403, 404, 409, s404=S404 + " Always for production tokens.", s409=S409),
        },
    )
    def post(self, request, approvalId: str) -> HttpResponse:
        return ok(approval_data(approval_expire_now(scope=self.scope, approval_id=approvalId)))
