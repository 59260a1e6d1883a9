"""The lists of an account's payments (requests, booked transactions, schedules)
and cancelling a schedule: the reads beside the payment routes."""

from drf_spectacular.utils import extend_schema, extend_schema_view

from bankapi.http.api import PAGE_PARAMETERS, AccountScopedView, CursorListView
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from payments.selectors import payment_requests_of, scheduled_payment_of, scheduled_payments_of, statement_of
from payments.serializers import (
    PaymentRequestListSerializer,
    ScheduledPaymentCancelledSerializer,
    ScheduledPaymentListSerializer,
    TransactionListSerializer,
)
from payments.services.schedules import schedule_cancel


@extend_schema_view(
    get=extend_schema(
        tags=["payments"],
        summary="Payment requests of an account",
        description=(
            "Accepted payments not yet settled (PENDING, PENDING_TM) and failed ones (FAILED, "
            "with failureReason), newest first. A settled payment leaves this list and appears "
            "on the transactions list."
        ),
        parameters=PAGE_PARAMETERS,
        responses={
            200: envelope("PaymentRequestListResponse", PaymentRequestListSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
)
class PaymentRequestListView(AccountScopedView, CursorListView):
    serializer = PaymentRequestListSerializer
    items_key = "paymentRequests"

    def rows(self):
        return payment_requests_of(self.account)


@extend_schema_view(
    get=extend_schema(
        tags=["payments"],
        summary="Booked transactions of an account",
        description=(
            "The account's statement, newest first: settled payments (and their fees) as DEBIT, "
            "funding such as the opening balance as CREDIT. Amounts are in the account currency."
        ),
        parameters=PAGE_PARAMETERS,
        responses={
            200: envelope("TransactionListResponse", TransactionListSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
)
class TransactionListView(AccountScopedView, CursorListView):
    serializer = TransactionListSerializer
    items_key = "transactions"
    created_field = "booked_at"

    def rows(self):
        return statement_of(self.account)


@extend_schema_view(
    get=extend_schema(
        tags=["payments"],
        summary="Scheduled payments of an account",
        description=(
            "Every schedule of the account, newest first, cancelled and completed ones included: "
            "its next run date (UTC day; runs happen at about 02:00 UTC), frequency, status and "
            "the outcome of its last run."
        ),
        parameters=PAGE_PARAMETERS,
        responses={
            200: envelope("ScheduledPaymentListResponse", ScheduledPaymentListSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
)
class ScheduledPaymentListView(AccountScopedView, CursorListView):
    serializer = ScheduledPaymentListSerializer
    items_key = "scheduledPayments"

    def rows(self):
        return scheduled_payments_of(self.account)


class ScheduledPaymentView(AccountScopedView):
    @extend_schema(
        tags=["payments"],
        summary="Cancel a scheduled payment",
        description=(
            "Stops every later run. The schedule stays listed with status CANCELLED; payments "
            "it already made are not affected."
        ),
        responses={
            200: envelope("ScheduledPaymentCancelledResponse", ScheduledPaymentCancelledSerializer()),
            **error_responses(
                401,
                403,
                404,
                409,
                s409="INVALID_STATE: the schedule is already cancelled or completed.",
            ),
        },
    )
    def delete(self, request, customerId: str, accountId: str, scheduleId: str):
        schedule = schedule_cancel(scheduled_payment_of(self.account, scheduleId))
        return ok(ScheduledPaymentCancelledSerializer(schedule).data)
