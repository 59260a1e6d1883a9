"""Approvals in the back office: policies edited (audited, see audit/), approvals read-only.

An approval changes only through its users (approve, reject) and the expiry; a
form edit would bypass the signatures it records.
"""

from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from approvals.models import Approval, ApprovalPolicy, ApprovalSignature
from bankapi.backoffice.admin_base import ExactSearchMixin, ReadOnlyModelAdmin, TenancyFixedMixin, money
from bankapi.backoffice.admin_display import readable_fields, short_id

# A batch's approval holds up to 10,000 items: its page lists the first ones.
ITEMS_SHOWN = 20


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
    fields = ("user", "signed_with", "approved_at", "passkey_signed")
    readonly_fields = fields
    verbose_name_plural = "signatures"

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="signed with")
    def signed_with(self, signature: ApprovalSignature) -> str:
        return signature.method_text()

    @admin.display(description="passkey")
    def passkey_signed(self, signature: ApprovalSignature) -> str:
        # The assertion is kept whole for a later check; an operator needs only which key signed.
        if not signature.passkey:
            return "-"
        return f"Assertion kept, credential {str(signature.passkey.get('credentialId', ''))[:16]}…"


def _amount(value: Any) -> Decimal | None:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def approval_totals(content: Any) -> dict[str, Decimal]:
    """What the approval moves, per currency: a payment's amount, or a batch's
    items added up."""
    if not isinstance(content, dict):
        return {}
    items = content.get("items")
    entries: list = items if isinstance(items, list) else [content]
    totals: dict[str, Decimal] = {}
    for entry in entries:
        amount = _amount(entry.get("amount")) if isinstance(entry, dict) else None
        if amount is not None:
            currency = str(entry.get("currency") or "")
            totals[currency] = totals.get(currency, Decimal(0)) + amount
    return totals


def _with_money(value: Any) -> Any:
    """The content with each amount written as operators read money ("20,000.00 GBP")."""
    if isinstance(value, list):
        return [_with_money(item) for item in value]
    if not isinstance(value, dict):
        return value
    shown = {key: _with_money(inner) for key, inner in value.items()}
    amount = _amount(value.get("amount")) if "currency" in value else None
    if amount is not None:
        shown["amount"] = money(amount, str(value["currency"]))
    return shown


@admin.register(Approval)
class ApprovalAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = (
        "approval_id",
        "kind",
        "status",
        "amount_total",
        "required",
        "owner",
        "initiator",
        "created_at",
        "expires_at",
    )
    list_filter = ("status", "kind", ("created_at", admin.DateFieldListFilter), "sandbox")
    list_select_related = ("customer", "custodian", "initiator")
    exact_search_fields = ("id",)
    search_help_text = "An exact approval id."
    ordering = ("-created_at",)
    inlines = [SignatureInline]
    # What an operator reads first: state, money, whose, what exactly; then the rest.
    readonly_fields = (
        "id",
        "status",
        "kind",
        "amount_total",
        "owner",
        "initiator",
        "content_fields",
        "result_fields",
        "required",
        "passkey_required",
        "content_hash",
        "expires_at",
        "program",
        "sandbox",
        "error_code",
        "error_message",
        "rejected_by",
        "reject_reason",
        "decided_at",
        "created_at",
    )
    fields = readonly_fields

    @admin.display(description="approval", ordering="id")
    def approval_id(self, approval: Approval) -> str:
        return short_id(approval.id)

    @admin.display(description="amount")
    def amount_total(self, approval: Approval) -> str:
        totals = approval_totals(approval.content)
        return ", ".join(money(amount, currency) for currency, amount in sorted(totals.items())) or "-"

    @admin.display(description="customer or custodian")
    def owner(self, approval: Approval) -> str:
        if approval.custodian_id:
            return f"Custodian: {approval.custodian}"
        return str(approval.customer) if approval.customer_id else "-"

    @admin.display(description="what is approved")
    def content_fields(self, approval: Approval) -> str:
        content = approval.content
        items = content.get("items") if isinstance(content, dict) else None
        if isinstance(items, list) and len(items) > ITEMS_SHOWN:
            shown = {**content, "items": items[:ITEMS_SHOWN]}
            return format_html(
                "{}<p>The first {} of {} items are shown.</p>",
                readable_fields(_with_money(shown)),
                ITEMS_SHOWN,
                len(items),
            )
        return readable_fields(_with_money(content))

    @admin.display(description="result")
    def result_fields(self, approval: Approval) -> str:
        return readable_fields(approval.result)
