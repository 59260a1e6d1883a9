"""Incoming payments in the back office: read-only.

An incoming payment is booked once, by the service that receives it (its
movement, statement entry and event in one transaction): no form, action or
delete here changes one. The pages name the debtor and the customer's account:
each list and page is recorded as a staff view (see `audit.services`).
"""

from django.contrib import admin

from bankapi.backoffice.admin_base import ExactSearchMixin, ReadOnlyModelAdmin, money
from payments.models import IncomingPayment


@admin.register(IncomingPayment)
class IncomingPaymentAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("id", "amount_with_currency", "debtor_name", "end_to_end_id", "account", "received_at")
    list_filter = (("received_at", admin.DateFieldListFilter), "sandbox", "program")
    exact_search_fields = ("id", "account", "customer", "end_to_end_id")
    search_help_text = "The API's incomingPaymentId exactly (or an account or customer id, or an endToEndId)."
    list_select_related = ("account",)
    ordering = ("-received_at", "-id")
    fields = (
        "id",
        "amount",
        "currency",
        "debtor_name",
        "debtor_iban",
        "end_to_end_id",
        "remittance_information",
        "received_at",
        "created_at",
        "account",
        "customer",
        "movement",
        "program",
        "sandbox",
    )
    readonly_fields = fields

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, incoming: IncomingPayment) -> str:
        return money(incoming.amount, incoming.currency)
