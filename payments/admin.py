from collections.abc import Callable

from django.contrib import admin

from bankapi.admin_base import ReadOnlyModelAdmin
from bankapi.errors import ApiError
from payments import admin_fx  # noqa: F401 - registers the FX admin
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment, ScheduleRun
from payments.services.settlement import payment_review_approve, payment_review_reject


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
    """Read-only but for compliance review: a payment changes only through the
    payment services, which these actions call (DESIGN 6)."""

    list_display = ("id", "status", "amount", "currency", "account", "created_at")
    list_filter = ("status", "sandbox", "program")
    search_fields = ("id", "reference")
    list_select_related = ("account",)
    actions = ["approve_held", "reject_held"]

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm("payments.review_paymentrequest")

    @admin.action(description="Approve selected held payments (they may then settle)", permissions=["review"])
    def approve_held(self, request, queryset) -> None:
        self._review(request, queryset, payment_review_approve)

    @admin.action(
        description="Reject selected held payments (amount and fee go back to the account)",
        permissions=["review"],
    )
    def reject_held(self, request, queryset) -> None:
        reason = f"Rejected in compliance review by {request.user.email}"
        self._review(request, queryset, lambda payment: payment_review_reject(payment, reason))

    def _review(self, request, queryset, review: Callable[[PaymentRequest], PaymentRequest]) -> None:
        reviewed = skipped = 0
        for payment in queryset:
            try:
                review(payment)
                reviewed += 1
            except ApiError:
                # No longer held (reviewed meanwhile by someone else): left as it is.
                skipped += 1
        self.message_user(request, f"{reviewed} reviewed; {skipped} no longer held, left unchanged.")


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
