"""The kernel in admin: programs (their settings are edited here), custodians,
customers and accounts."""

from django.contrib import admin
from django.contrib.admin.models import LogEntry

from bankapi.backoffice.admin_base import (
    CappedCountPaginator,
    ExactSearchMixin,
    ReadOnlyModelAdmin,
    TenancyFixedMixin,
    money,
)
from bankapi.idempotency.records import SEALED_PREFIX
from bankapi.models import Account, Custodian, Customer, IdempotencyRecord, Program


@admin.register(Program)
class ProgramAdmin(admin.ModelAdmin):
    """Program settings, read by `GET /v1/capabilities`."""

    list_display = (
        "name",
        "account_type",
        "international_payments_enabled",
        "cardholders_enabled",
        "pin_confirmation_enabled",
        "per_payment_limit",
        "review_threshold",
    )
    search_fields = ("name",)
    readonly_fields = ("id", "created_at")
    fieldsets = (
        (None, {"fields": ("id", "name", "account_type", "created_at")}),
        (
            "Capabilities",
            {
                "fields": (
                    "international_payments_enabled",
                    "cardholders_enabled",
                    "pin_confirmation_enabled",
                    "fee_waiver_allowed",
                    "require_idempotency_key",
                )
            },
        ),
        (
            "Limits and fees",
            {"fields": ("per_payment_limit", "daily_outbound_limit", "review_threshold", "fee_per_payment")},
        ),
    )

    def get_fieldsets(self, request, obj=None):
        # Settings other apps add to Program (e.g. a legal document set) show too.
        fieldsets = list(super().get_fieldsets(request, obj))
        listed = {name for _, options in fieldsets for name in options["fields"]}
        others = [
            field.name
            for field in Program._meta.get_fields()
            if getattr(field, "editable", False)
            and not field.auto_created
            and field.concrete
            and field.name not in listed
        ]
        if others:
            fieldsets.append(("Other settings", {"fields": tuple(others)}))
        return fieldsets


@admin.register(Custodian)
class CustodianAdmin(TenancyFixedMixin, ExactSearchMixin, admin.ModelAdmin):
    list_display = ("name", "program", "sandbox", "created_at")
    list_filter = ("sandbox", "program")
    exact_search_fields = ("id",)
    search_help_text = "An exact custodian id."
    list_select_related = ("program",)


@admin.register(Customer)
class CustomerAdmin(TenancyFixedMixin, ExactSearchMixin, admin.ModelAdmin):
    list_display = ("name", "kind", "program", "sandbox", "custodian", "created_at")
    list_filter = ("sandbox", "kind", "program")
    exact_search_fields = ("id", "custodian")
    contains_search_fields = ("name",)
    search_help_text = "Part of a name (any case), or an exact customer id or custodian id."
    list_select_related = ("program", "custodian")
    raw_id_fields = ("custodian",)
    paginator = CappedCountPaginator
    show_full_result_count = False


@admin.register(Account)
class AccountAdmin(TenancyFixedMixin, ExactSearchMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "name",
        "customer",
        "balance_with_currency",
        "available_with_currency",
        "sort_code",
        "account_number",
        "sandbox",
    )
    list_filter = ("sandbox", "program")
    exact_search_fields = ("id", "customer", "iban", "account_number")
    # An IBAN is stored without spaces, in capitals: sought so, however pasted.
    compact_search_fields = ("iban",)
    search_help_text = "An exact IBAN, account number, account id or customer id."
    list_select_related = ("customer",)
    raw_id_fields = ("customer",)
    paginator = CappedCountPaginator
    show_full_result_count = False

    @admin.display(description="balance", ordering="balance")
    def balance_with_currency(self, account: Account) -> str:
        return money(account.balance, account.currency)

    @admin.display(description="available")
    def available_with_currency(self, account: Account) -> str:
        """The balance less what a batch's unpaid items hold (their `payments.Hold` rows)."""
        return money(account.available, account.currency)

    def get_readonly_fields(self, request, obj=None):
        # Balances change only through ledger postings, and holds with their
        # batch items, never by editing; an account's currency, owner and
        # tenant (`TenancyFixedMixin`) are fixed once it exists.
        fixed = ("balance", "held") if obj is None else ("balance", "held", "currency")
        return (*super().get_readonly_fields(request, obj), *fixed)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Read-only: a key is claimed and completed by the request that sent it."""

    list_display = (
        "id",
        "operation",
        "key",
        "owner_kind",
        "owner_id",
        "state",
        "response_status",
        "created_at",
    )
    list_filter = ("state", "owner_kind", "sandbox")
    # Both indexed: the key has its own index (the owner's unique constraint leads
    # with program and environment, which an operator may not know).
    exact_search_fields = ("id", "key")
    search_help_text = "An exact record number or Idempotency-Key."
    ordering = ("-created_at",)
    exclude = ("response_body",)
    readonly_fields = ("stored_response",)

    @admin.display(description="response body")
    def stored_response(self, record: IdempotencyRecord) -> str:
        body = bytes(record.response_body or b"")
        if body.startswith(SEALED_PREFIX):
            return "(encrypted: it holds secrets shown only to the caller)"
        return body.decode("utf-8", "replace")


@admin.register(LogEntry)
class LogEntryAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """The admin log: who did what to which record, with the reason given.
    Every operator action writes here; nobody edits or deletes it."""

    list_display = ("action_time", "user", "content_type", "object_repr", "action_flag", "message")
    list_filter = ("action_flag", "content_type")
    # The object id is indexed by a migration of ours (bankapi 0003): Django's is not.
    exact_search_fields = ("object_id", "user")
    id_text_fields = ("object_id",)
    search_help_text = "An exact record id (e.g. a requestId) or staff user id."
    list_select_related = ("user", "content_type")
    # The id follows the time, and is the index.
    ordering = ("-pk",)

    @admin.display(description="change")
    def message(self, entry: LogEntry) -> str:
        return entry.get_change_message()
