from django.contrib import admin

from bankapi.admin_base import ReadOnlyModelAdmin
from payments import admin_fx  # noqa: F401 - registers the FX admin
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment, ScheduleRun


@admin.register(Beneficiary)
class BeneficiaryAdmin(admin.ModelAdmin):
    list_display = ("name", "customer", "account_kind", "sort_code", "account_number", "iban", "sandbox")
    list_filter = ("sandbox", "account_kind", "program")
    search_fields = ("name", "id", "account_number", "iban")
    list_select_related = ("customer",)
    raw_id_fields = ("customer",)
    # Taken from the customer (see Beneficiary.clean).
    exclude = ("program", "sandbox")


@admin.register(PaymentRequest)
class PaymentRequestAdmin(ReadOnlyModelAdmin):
    """Read-only: a payment changes only through the payment services."""

    list_display = ("id", "status", "amount", "currency", "account", "created_at")
    list_filter = ("status", "sandbox", "program")
    search_fields = ("id", "reference")
    list_select_related = ("account",)


class ScheduleRunInline(admin.TabularInline):
    model = ScheduleRun
    fields = ("run_date", "outcome", "payment_request", "reason")
    readonly_fields = fields
    ordering = ("-run_date",)
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ScheduledPayment)
class ScheduledPaymentAdmin(ReadOnlyModelAdmin):
    """Read-only: schedules are made and cancelled through the API."""

    list_display = ("id", "status", "frequency", "next_run_date", "amount", "currency", "account")
    list_filter = ("status", "frequency", "sandbox", "program")
    search_fields = ("id", "reference")
    list_select_related = ("account",)
    inlines = [ScheduleRunInline]
