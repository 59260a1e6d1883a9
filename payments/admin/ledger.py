"""The ledger and the statement in admin: read-only.

No admin path may change a balance except a service that posts balanced entries
(docs/architecture.md); these screens only look. They are the biggest tables of the service,
so the lists show no full count, filter only on fixed choices (a filter on a free
column scans the table for its values) and search exact indexed values only.
"""

import uuid

from django.contrib import admin

from bankapi.backoffice.admin_base import ExactSearchMixin, ReadOnlyModelAdmin, money
from payments.models import Hold, LedgerPosting, LedgerTransaction, StatementEntry, SystemAccount


@admin.register(SystemAccount)
class SystemAccountAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("kind", "currency", "program", "sandbox")
    list_filter = ("kind", "sandbox", "program")
    exact_search_fields = ("id",)
    list_select_related = ("program",)


class PostingInline(admin.TabularInline):
    model = LedgerPosting
    fields = ("holder", "signed_amount", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("account", "system_account__program")

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="holder")
    def holder(self, posting: LedgerPosting) -> str:
        return str(posting.account or posting.system_account)

    @admin.display(description="amount")
    def signed_amount(self, posting: LedgerPosting) -> str:
        return money(posting.amount, posting.currency)


@admin.register(LedgerTransaction)
class LedgerTransactionAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("id", "kind", "key", "memo", "program", "sandbox", "created_at")
    list_filter = ("kind", "sandbox")
    exact_search_fields = ("id", "key")
    search_help_text = "An exact transaction id or key (e.g. settle:<requestId>)."
    list_select_related = ("program",)
    ordering = ("-created_at",)
    inlines = [PostingInline]


@admin.register(LedgerPosting)
class LedgerPostingAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("id", "created_at", "transaction_kind", "transaction", "holder", "signed_amount")
    list_filter = ("transaction__kind",)
    exact_search_fields = ("id", "transaction", "account")
    search_help_text = "An exact posting number, transaction id or customer account id."
    list_select_related = ("transaction", "account", "system_account__program")
    ordering = ("-id",)

    @admin.display(description="kind")
    def transaction_kind(self, posting: LedgerPosting) -> str:
        return posting.transaction.get_kind_display()

    @admin.display(description="holder")
    def holder(self, posting: LedgerPosting) -> str:
        return str(posting.account or posting.system_account)

    @admin.display(description="amount", ordering="amount")
    def signed_amount(self, posting: LedgerPosting) -> str:
        return money(posting.amount, posting.currency)


class HoldStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return (("open", "Open (lowers the available balance)"), ("released", "Released"))

    def queryset(self, request, queryset):
        if self.value() == "open":
            return queryset.filter(released_at__isnull=True)
        if self.value() == "released":
            return queryset.filter(released_at__isnull=False)
        return queryset


@admin.register(Hold)
class HoldAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Money a batch's funding set aside for an item: it lowers the account's
    available balance until the item is paid or refused, and is no booking."""

    list_display = ("id", "account", "amount_with_currency", "memo", "placed_at", "released_at")
    list_filter = (HoldStateFilter, ("placed_at", admin.DateFieldListFilter))
    exact_search_fields = ("id", "account", "account__iban", "account__account_number")
    compact_search_fields = ("account__iban",)
    search_help_text = (
        "An exact hold id (a batch item's first hold takes its id), batch id (its items' holds), "
        "account id, IBAN or account number."
    )
    list_select_related = ("account",)
    ordering = ("-placed_at",)

    def get_search_results(self, request, queryset, search_term: str):
        found, duplicates = super().get_search_results(request, queryset, search_term)
        # A batch's holds say so in their memo ("Batch <id> item 3").
        try:
            batch_id = uuid.UUID(search_term.strip())
        except ValueError:
            return found, duplicates
        return found | queryset.filter(memo__startswith=f"Batch {batch_id} "), duplicates

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, hold: Hold) -> str:
        return money(hold.amount, hold.account.currency)


@admin.register(StatementEntry)
class StatementEntryAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = (
        "booked_at",
        "account",
        "direction",
        "amount_with_currency",
        "reference",
        "payment_request",
    )
    list_filter = ("direction", "sandbox")
    exact_search_fields = ("id", "account", "payment_request")
    search_help_text = "An exact entry id, account id or requestId."
    list_select_related = ("account", "payment_request")

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, entry: StatementEntry) -> str:
        return money(entry.amount, entry.currency)
