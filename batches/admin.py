"""Batches in the back office: read-only, but for retrying a failed item.

Batches, drafts and items change only through the batch services: submit,
processing, and `batch_item_retry` (the action below), which decides again on
an item's stored instruction and, accepted, holds its funds and lets the
batch's own processing pay it.
"""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from bankapi.backoffice import dashboard
from bankapi.backoffice.admin_base import ExactSearchMixin, ReadOnlyModelAdmin, apply_each, money
from bankapi.backoffice.admin_display import short_id
from batches.admin_figures import BatchChangeList, figures_of, items_table
from batches.models import Batch, BatchItem, Draft, ScaChallenge
from batches.services.retry import batch_item_retry


class OwnerLabels(admin.ModelAdmin):
    """Who a draft, challenge or batch belongs to, named as an operator says it:
    the custodian paying for its clients, or the customer paying from its own
    accounts (`owner_customer`), and the one customer whose accounts a batch sent
    on that customer's route may pay from (`route_customer`)."""

    def get_fields(self, request, obj=None):
        # Every column, read-only, the two customer columns under their labels.
        names = {"owner_customer": "paying_customer", "route_customer": "payers_limited_to"}
        columns = [names.get(field.name, field.name) for field in self.model._meta.fields]
        return columns + [name for name in self.readonly_fields if name not in columns]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description="custodian or customer")
    def owner_label(self, row) -> str:
        if row.custodian_id:
            return f"Custodian: {row.custodian}"
        return f"Customer: {row.owner_customer}" if row.owner_customer_id else "-"

    @admin.display(description="customer paying from its own accounts")
    def paying_customer(self, row) -> str:
        return str(row.owner_customer) if row.owner_customer_id else "-"

    @admin.display(description="payer accounts limited to the customer")
    def payers_limited_to(self, row) -> str:
        return str(row.route_customer) if row.route_customer_id else "-"


@admin.register(Batch)
class BatchAdmin(OwnerLabels, ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = (
        "id",
        "status",
        "items_count",
        "items_total",
        "items_statuses",
        "owner_label",
        "message_id",
        "created_at",
    )
    # The program and the environment are filters (and on the change page), not
    # columns: the list fits 1366 px.
    list_filter = ("status", ("created_at", admin.DateFieldListFilter), "sandbox", "program")
    # message_id: an ISO 20022 file's GrpHdr/MsgId (indexed).
    exact_search_fields = ("id", "custodian", "owner_customer", "message_id")
    search_help_text = "An exact batch id, custodian id, customer id or a file's MsgId."
    list_select_related = ("custodian", "owner_customer")
    ordering = ("-created_at",)
    readonly_fields = ("owner", "items_count", "items_total", "items_statuses", "items")

    def get_changelist(self, request, **kwargs):
        return BatchChangeList

    def get_fields(self, request, obj=None):
        # Who the batch is of, once; then what it holds, then the rest.
        return [
            "id",
            "status",
            "owner",
            "items_count",
            "items_total",
            "items_statuses",
            "items",
            "valid_count",
            "currency",
            "message_id",
            "message_name",
            "submitted_by",
            "program",
            "sandbox",
            "created_at",
            "updated_at",
        ]

    @admin.display(description="custodian or customer")
    def owner(self, batch: Batch) -> str:
        """The owner, with how its payers are limited, naming a customer once."""
        if batch.custodian_id:
            text = f"Custodian: {batch.custodian}"
            if batch.route_customer_id:
                text += f"; payer accounts limited to customer {batch.route_customer}"
            elif batch.customer_id:
                text += f"; every payer account is customer {batch.customer}'s"
            return text
        text = f"Customer: {batch.owner_customer}, paying from its own accounts"
        if batch.route_customer_id and batch.route_customer_id != batch.owner_customer_id:
            text += f"; payer accounts limited to customer {batch.route_customer}"
        elif batch.route_customer_id:
            text += " (payer accounts limited to this customer)"
        return text

    @admin.display(description="items", ordering="payments_count")
    def items_count(self, batch: Batch) -> str:
        return f"{batch.payments_count:,}"

    @admin.display(description="total per currency")
    def items_total(self, batch: Batch) -> str:
        return figures_of(batch).totals_text()

    @admin.display(description="items by status")
    def items_statuses(self, batch: Batch) -> str:
        return figures_of(batch).statuses_text()

    @admin.display(description="first items")
    def items(self, batch: Batch) -> str:
        return items_table(batch)


@admin.register(BatchItem)
class BatchItemAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = (
        "id",
        "batch_id_short",
        "index",
        "end_to_end_id",
        "status",
        "amount_with_currency",
        "account",
        "payment_id_short",
        "error",
        "updated_at",
    )
    list_filter = ("status", "sandbox")
    exact_search_fields = ("batch", "id", "payment")
    search_help_text = "An exact batch id (its items), item id or requestId."
    list_select_related = ("batch", "account", "payment")
    # Items are the biggest batch table: newest-first would sort it whole; the
    # primary key order comes from its index. Search a batch id for its items.
    ordering = ("-pk",)
    actions = ["retry"]

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, item: BatchItem) -> str:
        return money(item.amount, item.currency)

    @admin.display(description="batch")
    def batch_id_short(self, item: BatchItem) -> str:
        url = reverse("admin:batches_batch_change", args=[item.batch_id])
        return format_html('<a href="{}">{}</a>', url, short_id(item.batch_id))

    @admin.display(description="payment")
    def payment_id_short(self, item: BatchItem) -> str:
        return short_id(item.payment_id)

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("batches.retry_batchitem")

    @admin.action(
        description="Retry selected items failed for funds or a limit (decide again and pay)",
        permissions=["retry"],
    )
    def retry(self, request, queryset) -> None:
        def retry_one(item: BatchItem) -> str:
            retried = batch_item_retry(item=item)
            if retried.status == BatchItem.Status.FAILED:
                return f"Retry refused: {retried.error}"
            return "Retried: funds held, queued for payment"

        apply_each(self, request, queryset, retry_one)


@admin.register(Draft)
class DraftAdmin(OwnerLabels, ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = (
        "id",
        "message_id",
        "payments_count",
        "verified_at",
        "expires_at",
        "submitted_at",
        "owner_label",
        "sandbox",
    )
    list_filter = ("sandbox", "program")
    exact_search_fields = ("id", "custodian", "owner_customer")
    search_help_text = "An exact draft id, custodian id or customer id."
    list_select_related = ("custodian", "owner_customer")
    ordering = ("-created_at",)


@admin.register(ScaChallenge)
class ScaChallengeAdmin(OwnerLabels, ExactSearchMixin, ReadOnlyModelAdmin):
    """What initiate answered: the challenge a submit must present (no secret in it)."""

    list_display = ("id", "user", "total_amount_with_currency", "expires_at", "consumed_at", "sandbox")
    list_filter = ("sandbox",)
    exact_search_fields = ("id", "user")
    search_help_text = "An exact challenge id or user id."
    list_select_related = ("user",)
    ordering = ("-created_at",)

    @admin.display(description="total")
    def total_amount_with_currency(self, challenge: ScaChallenge) -> str:
        return money(challenge.total_amount, challenge.currency)


def failed_batch_items() -> tuple[int, str]:
    # Counted on the status index.
    count = BatchItem.objects.filter(status=BatchItem.Status.FAILED).count()
    return count, reverse("admin:batches_batchitem_changelist") + f"?status__exact={BatchItem.Status.FAILED}"


dashboard.counter_register(dashboard.FAILED_BATCH_ITEMS, failed_batch_items)
