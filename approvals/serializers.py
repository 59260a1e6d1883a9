"""What the approval routes take and answer."""

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from approvals.models import MAX_APPROVERS, Approval, ApprovalPolicy, ApprovalSignature
from approvals.selectors import status_now
from authn.serializers import ConfirmationSerializer
from bankapi.approval_gate import HeldSerializer
from bankapi.http.serializers import InputSerializer, SingleLineTextField

STATUSES = [choice for choice, _ in Approval.Status.choices]
HASH_HELP = (
    "Lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON of `content`: anyone can recompute it."
)


class ApprovalTierSerializer(serializers.Serializer):
    minAmount = serializers.CharField(
        help_text="Decimal string with two decimals, in the payment's own currency."
    )
    approvers = serializers.IntegerField(
        min_value=1, max_value=MAX_APPROVERS, help_text="How many distinct other users must approve."
    )


class ApprovalPolicySerializer(serializers.Serializer):
    tiers = ApprovalTierSerializer(
        many=True,
        help_text="The highest tier whose minAmount the amount reaches applies (for a batch: each "
        "currency's total of its valid payments). Empty: nothing needs approval.",
    )
    expiresAfterHours = serializers.IntegerField(source="expires_after_hours")
    passkeyRequired = serializers.BooleanField(
        source="passkey_required", help_text="False: an authenticator-app (TOTP) code may approve too."
    )


def policy_data(policy: ApprovalPolicy | None) -> dict[str, Any]:
    if policy is None:
        policy = ApprovalPolicy(tiers=[])
    return dict(ApprovalPolicySerializer(policy).data)


def held_data(approval: Approval) -> dict[str, Any]:
    return dict(
        HeldSerializer(
            {
                "approvalId": approval.id,
                "status": approval.status,
                "required": approval.required,
                "approved": 0,
                "expiresAt": approval.expires_at,
            }
        ).data
    )


class StoredAssertionSerializer(serializers.Serializer):
    credentialId = serializers.CharField(help_text="base64url")
    authenticatorData = serializers.CharField(help_text="base64url")
    clientDataJSON = serializers.CharField(
        help_text="base64url; its challenge is contentHash's 32 bytes then a nonce."
    )
    signature = serializers.CharField(help_text="base64url")


class SignatureSerializer(serializers.Serializer):
    userId = serializers.UUIDField(source="user_id")
    method = serializers.ChoiceField(choices=[choice for choice, _ in ApprovalSignature.Method.choices])
    approvedAt = serializers.DateTimeField(source="approved_at")
    passkey = StoredAssertionSerializer(allow_null=True, help_text="The assertion as sent; null for TOTP.")


class ResultSerializer(serializers.Serializer):
    requestId = serializers.UUIDField(required=False)
    scheduleId = serializers.UUIDField(required=False)
    batchId = serializers.UUIDField(required=False)


class ApprovalErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


@extend_schema_field(
    {
        "type": "object",
        "description": "What the approvers sign: a payment or schedule "
        "{kind, accountId, amount, currency, reference, payee, scheduledDate?, frequency?} or a batch "
        "{kind: batch, items: [{accountId, amount, currency, reference, payee}]}; payee "
        "{name, accountNumber, sortCode, iban, bic}, absent parts null.",
        "additionalProperties": True,
    }
)
class ContentField(serializers.Field):
    def to_representation(self, value: Any) -> Any:
        return value


class ApprovalSerializer(serializers.Serializer):
    approvalId = serializers.UUIDField(source="id")
    status = serializers.SerializerMethodField()
    # The metaclass takes declared fields off the class: this does not replace Field.required.
    required = serializers.IntegerField()  # type: ignore[assignment]
    approved = serializers.SerializerMethodField()
    expiresAt = serializers.DateTimeField(source="expires_at")
    initiatorUserId = serializers.UUIDField(source="initiator_id")
    content = ContentField()
    contentHash = serializers.CharField(source="content_hash", help_text=HASH_HELP)
    approvals = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ChoiceField(choices=STATUSES))
    def get_status(self, approval: Approval) -> str:
        return status_now(approval)

    def get_approved(self, approval: Approval) -> int:
        return len(approval.signatures.all())

    @extend_schema_field(SignatureSerializer(many=True))
    def get_approvals(self, approval: Approval) -> list:
        signatures = sorted(approval.signatures.all(), key=lambda row: (row.approved_at, row.id))
        return list(SignatureSerializer(signatures, many=True).data)

    @extend_schema_field(ResultSerializer(allow_null=True))
    def get_result(self, approval: Approval) -> dict | None:
        return approval.result

    @extend_schema_field(ApprovalErrorSerializer(allow_null=True))
    def get_error(self, approval: Approval) -> dict | None:
        if not approval.error_code:
            return None
        return {"code": approval.error_code, "message": approval.error_message}


def approval_data(approval: Approval) -> dict[str, Any]:
    return dict(ApprovalSerializer(approval).data)


class ApprovalListSerializer(serializers.Serializer):
    approvals = ApprovalSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True)


class ApproveInputSerializer(InputSerializer):
    confirmation = ConfirmationSerializer(
        help_text="{method: passkey, passkeySession, assertion} over this approval's challenge, or "
        "{method: totp, code} where the policy does not require a passkey. pin is never taken (422)."
    )


class RejectInputSerializer(InputSerializer):
    # The one single-line rule of free text: a pattern of its own let bidi
    # overrides and isolates, zero-width characters and line separators through.
    reason = SingleLineTextField(min_length=1, max_length=500, help_text="Why it is rejected.")
