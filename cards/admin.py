"""Cards in the back office: PAN masked to the last four, CVV never shown.

Cards are issued through `card_issue`; neither the PAN nor the CVV is a field
of any admin form once the card exists, and no list, search or page shows them.
"""

from django import forms
from django.contrib import admin, messages

from bankapi.backoffice.admin_base import CappedCountPaginator, ExactSearchMixin, ReadOnlyModelAdmin, money
from bankapi.errors import ApiError
from bankapi.models import Account
from cards.models import Card, CardAuthorization, Cardholder
from cards.services import card_issue, card_numbers_resolve


class CardIssueForm(forms.ModelForm):
    """Issue a card. Sandbox accounts may leave the numbers empty: test numbers are made."""

    card_number = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False), help_text="From the card processor."
    )
    card_cvv = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False), label="CVV")
    card_expiry_month = forms.IntegerField(required=False, min_value=1, max_value=12, label="Expiry month")
    card_expiry_year = forms.IntegerField(required=False, label="Expiry year")

    class Meta:
        model = Card
        fields = ("account", "name_on_card")

    def clean(self) -> dict:
        super().clean()
        data = self.cleaned_data
        account: Account | None = data.get("account")
        if account is None or self.errors:
            return data
        try:
            self.numbers = card_numbers_resolve(
                account=account,
                pan=data.get("card_number") or None,
                cvv=data.get("card_cvv") or None,
                expiry_month=data.get("card_expiry_month"),
                expiry_year=data.get("card_expiry_year"),
            )
        except ApiError as exc:
            # The message names the rule, never the value typed.
            raise forms.ValidationError(exc.message) from None
        return data


ISSUE_FIELDS = ("account", "name_on_card", "card_number", "card_cvv", "card_expiry_month", "card_expiry_year")


@admin.register(Card)
class CardAdmin(ExactSearchMixin, admin.ModelAdmin):
    list_display = ("id", "masked_pan", "name_on_card", "status", "expiry", "account", "sandbox")
    list_filter = ("status", "sandbox", "program")
    # Exact ids only: a card number typed here is no id, so it finds nothing.
    exact_search_fields = ("id", "account")
    search_help_text = "An exact card id or account id."
    list_select_related = ("account",)
    paginator = CappedCountPaginator
    show_full_result_count = False
    raw_id_fields = ("account",)
    readonly_fields = ("masked_pan", "expiry", "account", "name_on_card", "holders", "program", "sandbox")
    fields = ("masked_pan", "expiry", "name_on_card", "status", "account", "holders", "program", "sandbox")

    @admin.display(description="Card number")
    def masked_pan(self, card: Card) -> str:
        return f"•••• {card.last_four}"

    @admin.display(description="Expiry")
    def expiry(self, card: Card) -> str:
        return f"{card.expiry_month:02d}/{card.expiry_year}"

    @admin.display(description="Cardholders")
    def holders(self, card: Card) -> str:
        return ", ".join(str(holder) for holder in card.cardholders.all()) or "-"

    def has_add_permission(self, request) -> bool:
        # Issuing is an operator action of its own (operations), not a form edit.
        return request.user.has_perm("cards.issue_card")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = CardIssueForm
            kwargs["fields"] = None
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return (
                "account",
                "name_on_card",
                "card_number",
                "card_cvv",
                "card_expiry_month",
                "card_expiry_year",
            )
        return self.fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def save_model(self, request, obj: Card, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = card_issue(
            account=form.cleaned_data["account"],
            name_on_card=form.cleaned_data["name_on_card"],
            numbers=form.numbers,
        )
        # The admin carries on with `obj` (messages, redirect): make it the issued card.
        for field in Card._meta.concrete_fields:
            setattr(obj, field.attname, getattr(issued, field.attname))
        obj._state.adding, obj._state.db = False, issued._state.db
        messages.info(request, f"Issued card ending {issued.last_four}.")


@admin.register(Cardholder)
class CardholderAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    list_display = ("id", "first_name", "last_name", "email", "account", "sandbox")
    list_filter = ("sandbox", "program")
    exact_search_fields = ("id", "account")
    contains_search_fields = ("first_name", "last_name", "email")
    search_help_text = "Part of a name or e-mail (any case), or an exact cardholder id or account id."
    list_select_related = ("account",)


@admin.register(CardAuthorization)
class CardAuthorizationAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Read-only: an authorization is decided, cleared, reversed and expired by
    the card-spending service only (the acceptance decision and the ledger's
    hold and booking); no form, action or delete here changes one. Its pages
    name the card's account and customer: recorded as staff views."""

    list_display = (
        "id",
        "status",
        "amount_with_currency",
        "merchant_name",
        "decline_reason",
        "card",
        "account",
        "authorized_at",
    )
    list_filter = ("status", ("authorized_at", admin.DateFieldListFilter), "sandbox", "program")
    exact_search_fields = ("id", "card", "account", "customer")
    search_help_text = "The API's authorizationId exactly (or a card, account or customer id)."
    list_select_related = ("card", "account")
    ordering = ("-authorized_at", "-id")
    fields = (
        "id",
        "status",
        "amount",
        "currency",
        "merchant_name",
        "merchant_category_code",
        "decline_reason",
        "cleared_amount",
        "authorized_at",
        "expires_at",
        "usage_day",
        "created_at",
        "card",
        "account",
        "customer",
        "hold",
        "clearing",
        "program",
        "sandbox",
    )
    readonly_fields = fields

    @admin.display(description="amount", ordering="amount")
    def amount_with_currency(self, authorization: CardAuthorization) -> str:
        return money(authorization.amount, authorization.currency)
