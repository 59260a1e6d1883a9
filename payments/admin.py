"""Payments in the back office: every record visible, none editable by form.

A payment, a schedule or a ledger row changes only through the payment services,
which lock, re-check the state and post balanced entries; the actions below call
them and record what they did (with the operator's reason) in the admin log.
"""

from datetime import UTC, datetime, time
from decimal import Decimal

from django import forms
from django.contrib import admin
from django.db.models import Count, Sum
from django.db.models.functions import TruncHour
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.timezone import localtime

from bankapi import dashboard
from bankapi.admin_base import (
    CappedCountPaginator,
    ExactSearchMixin,
    ReadOnlyModelAdmin,
    TenancyFixedMixin,
    action_with_reason,
    apply_each,
    money,
)
from bankapi.errors import ApiError, ErrorCode
from payments import admin_fx, admin_incoming, admin_ledger  # noqa: F401 - register FX, incoming and ledger screens
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment, ScheduleRun
from payments.services.returns import RETURN_REASON_CODES, payment_return
from payments.services.settlement import (
    payment_fail,
    payment_review_approve,
    payment_review_reject,
    payment_settle,
)

HELD = PaymentRequest.Status.PENDING_TM
# What the customer and the integrator see as `failureReason` after a rejection.
# The operator's own reason stays in the admin log: a compliance refusal must not
# tip the customer off about what was suspected.
REJECTED_IN_REVIEW = "Rejected in compliance review"


@admin.register(Beneficiary)
class BeneficiaryAdmin(TenancyFixedMixin, ExactSearchMixin, admin.ModelAdmin):
    list_display = ("name", "customer", "account_kind", "sort_code", "account_number", "iban", "sandbox")
    list_filter = ("sandbox", "account_kind", "program")
    exact_search_fields = ("id", "customer", "iban", "account_number")
    compact_search_fields = ("iban",)
    contains_search_fields = ("name",)
    search_help_text = (
        "Part of a payee's name (any case), an exact IBAN or account number, or a beneficiary or customer id."
    )
    list_select_related = ("customer",)
    raw_id_fields = ("customer",)
    paginator = CappedCountPaginator
    show_full_result_count = False
    # Taken from the customer (see Beneficiary.clean).
    exclude = ("program", "sandbox")


def account_text(account) -> str:
    """An account as an operator names it: its name, and its number or IBAN."""
    number = (
        f"{account.sort_code} {account.account_number}".strip() if account.account_number else account.iban
    )
    return f"{account} {number}".strip()


def payee_text(payment: PaymentRequest) -> str:
    """Whom the payment pays: the saved beneficiary or the payee given inline,
    with its account."""
    if payment.beneficiary is not None:
        payee = payment.beneficiary
        number = f"{payee.sort_code} {payee.account_number}".strip() if payee.account_number else payee.iban
        return f"{payee.name}, {number}".strip(", ")
    stored = payment.payee if isinstance(payment.payee, dict) else {}
    account = stored.get("account") or {}
    if account.get("kind") == "uk":
        number = f"{account.get('sort_code', '')} {account.get('account_number', '')}".strip()
    else:
        number = str(account.get("iban", ""))
    return f"{stored.get('name', '-')}, {number}".strip(", ") if stored else "-"


def _not_sandbox(payment: PaymentRequest) -> ApiError:
    return ApiError(
        ErrorCode.INVALID_STATE, "production payments settle and fail through the settlement run only"
    )


class ReturnReasonForm(forms.Form):
    reason = forms.ChoiceField(
        choices=[(code, f"{code}: {meaning}") for code, meaning in RETURN_REASON_CODES.items()],
        help_text="The return reason code the scheme reported; shown on the customer's statement.",
    )


@admin.register(PaymentRequest)
class PaymentRequestAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Read-only but for the actions: compliance review of held payments
    (approve or reject, with a reason) and, in the sandbox, settling or failing a payment."""

    list_display = (
        "id",
        "status",
        "amount_with_currency",
        "fee_with_currency",
        "account",
        "customer",
        "sandbox",
        "created_at",
    )
    # The program is a filter (and on the change page), not a column: the list fits 1366 px.
    list_filter = ("status", ("created_at", admin.DateFieldListFilter), "sandbox", "program")
    exact_search_fields = ("id", "account", "customer")
    search_help_text = "The API's requestId exactly (or an account or customer id)."
    list_select_related = ("account", "customer")
    ordering = ("-created_at",)
    actions = ["approve_held", "reject_held", "settle_sandbox", "fail_sandbox", "record_return"]

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, payment: PaymentRequest) -> str:
        return money(payment.amount, payment.currency)

    @admin.display(description="fee")
    def fee_with_currency(self, payment: PaymentRequest) -> str:
        return money(payment.fee, payment.account.currency)

    def get_queryset(self, request):
        # The confirm page names each payment's customer and payee.
        return super().get_queryset(request).select_related("customer", "account", "beneficiary")

    def confirm_description(self, payment: PaymentRequest) -> list[tuple[str, str]]:
        """What a reviewer confirms: whose money, to whom, how much, in which state."""
        return [
            ("Payment", str(payment.id)),
            ("Customer", str(payment.customer)),
            ("From account", account_text(payment.account)),
            ("Payee", payee_text(payment)),
            ("Amount", money(payment.amount, payment.currency)),
            ("Fee", money(payment.fee, payment.account.currency)),
            ("Reference", payment.reference or "-"),
            ("Status", payment.get_status_display()),
            ("Created", date_format(localtime(payment.created_at), "DATETIME_FORMAT")),
        ]

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm("payments.review_paymentrequest")

    def has_record_return_permission(self, request) -> bool:
        return request.user.has_perm("payments.return_paymentrequest")

    def has_drive_sandbox_permission(self, request) -> bool:
        return request.user.has_perm("payments.drive_sandbox_paymentrequest")

    @admin.action(description="Approve selected held payments (they may then settle)", permissions=["review"])
    def approve_held(self, request, queryset):
        def approve(payment: PaymentRequest, reason: str) -> str:
            payment_review_approve(payment)
            return f"Approved in compliance review: {reason}"

        return action_with_reason(self, request, queryset, title="Approve held payments", apply=approve)

    @admin.action(
        description="Reject selected held payments (amount and fee go back to the account)",
        permissions=["review"],
    )
    def reject_held(self, request, queryset):
        def reject(payment: PaymentRequest, reason: str) -> str:
            payment_review_reject(payment, REJECTED_IN_REVIEW)
            return f"Rejected in compliance review: {reason}"

        return action_with_reason(self, request, queryset, title="Reject held payments", apply=reject)

    @admin.action(description="Sandbox: settle selected pending payments", permissions=["drive_sandbox"])
    def settle_sandbox(self, request, queryset) -> None:
        def settle(payment: PaymentRequest) -> str:
            if not payment.sandbox:
                raise _not_sandbox(payment)
            payment_settle(payment)
            return "Settled in the sandbox"

        apply_each(self, request, queryset, settle)

    @admin.action(
        description="Sandbox: fail selected payments (funds go back)", permissions=["drive_sandbox"]
    )
    def fail_sandbox(self, request, queryset):
        def fail(payment: PaymentRequest, reason: str) -> str:
            if not payment.sandbox:
                raise _not_sandbox(payment)
            payment_fail(payment, reason)
            return f"Failed in the sandbox: {reason}"

        return action_with_reason(self, request, queryset, title="Fail sandbox payments", apply=fail)

    @admin.action(
        description="Record a return of selected settled payments",
        permissions=["record_return"],
    )
    def record_return(self, request, queryset):
        def record(payment: PaymentRequest, reason: str) -> str:
            payment_return(payment, reason)
            return f"Returned by the payee's bank: {reason}"

        return action_with_reason(
            self,
            request,
            queryset,
            title="Record returned payments",
            apply=record,
            form_class=ReturnReasonForm,
        )


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
class ScheduledPaymentAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Read-only: schedules are made and cancelled through the API."""

    list_display = (
        "id",
        "status",
        "frequency",
        "next_run_date",
        "amount_with_currency",
        "account",
        "sandbox",
    )
    list_filter = ("status", "frequency", "sandbox", "program")
    exact_search_fields = ("id", "account")
    search_help_text = "An exact schedule id or account id."
    list_select_related = ("account",)
    inlines = [ScheduleRunInline]

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, schedule: ScheduledPayment) -> str:
        return money(schedule.amount, schedule.currency)


@admin.register(ScheduleRun)
class ScheduleRunAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """What happened on each run date of each schedule (also shown on the schedule)."""

    list_display = ("run_date", "schedule", "outcome", "payment_request", "reason")
    list_filter = ("outcome",)
    exact_search_fields = ("schedule", "payment_request")
    search_help_text = "An exact schedule id or requestId."
    list_select_related = ("schedule", "payment_request")
    ordering = ("-pk",)


def held_payments_to_review() -> tuple[int, str]:
    # Counted on the (status, sandbox) index.
    count = PaymentRequest.objects.filter(status=HELD).count()
    return count, reverse("admin:payments_paymentrequest_changelist") + f"?status__exact={HELD}"


def payment_volume_today() -> list[dashboard.Volume]:
    """Payments accepted since midnight UTC, failed ones excluded, per currency,
    environment and hour (read on the created_at index)."""
    midnight = datetime.combine(timezone.now().date(), time.min, tzinfo=UTC)
    rows = (
        PaymentRequest.objects.filter(created_at__gte=midnight)
        .exclude(status=PaymentRequest.Status.FAILED)
        .annotate(hour=TruncHour("created_at"))
        .values("currency", "sandbox", "hour")
        .annotate(payments=Count("id"), amount=Sum("amount"))
        .order_by()
    )
    totals: dict[tuple[str, bool], dict] = {}
    for row in rows:
        entry = totals.setdefault(
            (row["currency"], row["sandbox"]), {"payments": 0, "hourly": [Decimal("0")] * 24}
        )
        entry["payments"] += row["payments"]
        entry["hourly"][row["hour"].hour] += row["amount"]
    return [
        dashboard.Volume(
            currency=currency,
            sandbox=sandbox,
            payments=entry["payments"],
            amount=sum(entry["hourly"]),
            hourly=tuple(entry["hourly"]),
        )
        for (currency, sandbox), entry in totals.items()
    ]


dashboard.counter_register(dashboard.HELD_PAYMENTS, held_payments_to_review)
dashboard.volume_register(payment_volume_today)
