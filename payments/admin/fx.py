"""Admin for FX: operators edit the sandbox rate table; quotes are read-only."""

from django.contrib import admin

from bankapi.backoffice.admin_base import ExactSearchMixin, ReadOnlyModelAdmin, money
from payments.models import FxQuote, FxRate


@admin.register(FxRate)
class FxRateAdmin(admin.ModelAdmin):
    list_display = ("__str__", "base_currency", "quote_currency", "mid_rate", "spread_bps", "updated_at")
    list_display_links = ("__str__",)
    list_editable = ("mid_rate", "spread_bps")
    search_fields = ("base_currency", "quote_currency")
    readonly_fields = ("updated_at",)


@admin.register(FxQuote)
class FxQuoteAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """A quote is a price already given to a customer: it is looked at, never edited."""

    list_display = (
        "id",
        "account",
        "currency_one",
        "currency_two",
        "amount_with_currency",
        "rate",
        "price_with_currency",
        "tenor",
        "value_date",
        "valid_until",
        "used_at",
        "created_at",
    )
    # Filters with fixed choices only: a filter on a free column (or a date
    # hierarchy) scans the whole table for its values, and quotes pile up quickly.
    list_filter = ("sandbox", "tenor")
    exact_search_fields = ("id", "account")
    search_help_text = "An exact quote id or account id."
    list_select_related = ("account",)
    ordering = ("-created_at",)

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, quote: FxQuote) -> str:
        return money(quote.amount, quote.amount_currency)

    @admin.display(description="price")
    def price_with_currency(self, quote: FxQuote) -> str:
        other = quote.currency_two if quote.amount_currency == quote.currency_one else quote.currency_one
        return money(quote.price, other)
