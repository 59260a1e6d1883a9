"""Approvals in the back office: policies edited (audited, see audit/), approvals read-only.

An approval changes only through its users (approve, reject) and the expiry; a
form edit would bypass the signatures it records.
"""

from django.contrib import admin

from approvals.models import Approval, ApprovalPolicy, ApprovalSignature
from bankapi.admin_base import ExactSearchMixin, ReadOnlyModelAdmin, TenancyFixedMixin


@admin.register(ApprovalPolicy)
class ApprovalPolicyAdmin(TenancyFixedMixin, admin.ModelAdmin):
    list_display = ("__str__", "program", "sandbox", "expires_after_hours", "passkey_required", "updated_at")
    list_filter = ("sandbox", "passkey_required")
    list_select_related = ("customer", "custodian", "program")
    raw_id_fields = ("customer", "custodian")
    fields = (
        "program",
        "sandbox",
        "customer",
        "custodian",
        "tiers",
        "expires_after_hours",
        "passkey_required",
    )
    # The form runs the model's clean(): tiers, the one owner and its tenant are checked there.


class SignatureInline(admin.TabularInline):
    model = ApprovalSignature
    extra = 0
    can_delete = False
    fields = ("user", "method", "approved_at", "passkey")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Approval)
class ApprovalAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("id", "kind", "status", "required", "customer", "custodian", "created_at", "expires_at")
    list_filter = ("status", "kind", "sandbox")
    list_select_related = ("customer", "custodian")
    exact_search_fields = ("id",)
    inlines = [SignatureInline]
    readonly_fields = (
        "id",
        "program",
        "sandbox",
        "kind",
        "status",
        "customer",
        "custodian",
        "initiator",
        "required",
        "passkey_required",
        "content",
        "content_hash",
        "expires_at",
        "result",
        "error_code",
        "error_message",
        "rejected_by",
        "reject_reason",
        "decided_at",
        "created_at",
    )
    exclude = ("replay",)
