"""GET /v1/accounts/{accountId}/fx/quote."""

import json
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from bankapi.formats import CALENDAR_DAY_PATTERN, ISO_DATE, iso_date_parse
from bankapi.http.api import ScopedAPIView
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import RegexField, StrictChoiceField
from bankapi.scope import access_any_account
from payments.fields import CurrencyField
from payments.formats import AMOUNT, MAX_AMOUNT, POSITIVE_AMOUNT_PATTERN
from payments.fx import fx_quote_create
from payments.models import FxQuote


class FxQuoteQuerySerializer(serializers.Serializer):
    currencyOne = CurrencyField(help_text="The currency the customer sells (ISO 4217, 2 decimal places).")
    currencyTwo = CurrencyField(
        help_text="The currency the customer buys (ISO 4217, 2 decimal places); differs from currencyOne."
    )
    amountCurrency = CurrencyField(help_text="The side `amount` is in: currencyOne or currencyTwo.")
    amount = RegexField(
        AMOUNT,
        openapi={"pattern": POSITIVE_AMOUNT_PATTERN},
        trim_whitespace=False,
        help_text="Plain decimal string above zero, at most 2 decimal places.",
        error_messages={"invalid": "Must be a plain decimal string with at most 2 decimal places."},
    )
    tenor = StrictChoiceField(
        choices=FxQuote.Tenor.values,
        required=False,
        default=FxQuote.Tenor.SPOT,
        help_text="ON: today; TN: next business day; SPOT (default): two business days.",
    )
    valueDate = RegexField(
        ISO_DATE,
        openapi={"pattern": CALENDAR_DAY_PATTERN},
        trim_whitespace=False,
        required=False,
        help_text=(
            "Valuation date, YYYY-MM-DD (UTC). Overrides the tenor's date; must be today "
            "or later and a business day (Monday to Friday)."
        ),
        error_messages={"invalid": "Must be a date in the form YYYY-MM-DD."},
    )

    def to_internal_value(self, data: Any) -> dict:
        errors = {}
        if "indicative" in data:
            errors["indicative"] = ["Quotes here are always firm: the indicative flag cannot be set."]
        if hasattr(data, "getlist"):
            errors.update({name: ["Must be given once."] for name in data if len(data.getlist(name)) > 1})
            data = {name: data.get(name) for name in data}
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)

    def validate_amount(self, value: str) -> Decimal:
        amount = Decimal(value)
        if amount <= 0:
            raise serializers.ValidationError("Must be greater than zero.")
        if amount > MAX_AMOUNT:
            raise serializers.ValidationError("Must have at most 16 digits before the decimal point.")
        return amount

    def validate_valueDate(self, value: str) -> date:
        try:
            return iso_date_parse(value)
        except ValueError:
            raise serializers.ValidationError("Not a calendar date.")

    def validate(self, attrs: dict) -> dict:
        if attrs["currencyOne"] == attrs["currencyTwo"]:
            raise serializers.ValidationError({"currencyTwo": ["Must differ from currencyOne."]})
        if attrs["amountCurrency"] not in (attrs["currencyOne"], attrs["currencyTwo"]):
            raise serializers.ValidationError({"amountCurrency": ["Must equal currencyOne or currencyTwo."]})
        return attrs


class ValueDateField(serializers.DateTimeField):
    """A value date shown as the ISO 8601 timestamp of its start (00:00 UTC)."""

    def to_representation(self, value: date) -> str:
        return super().to_representation(datetime.combine(value, time.min, tzinfo=UTC))


def _number(max_digits: int, decimal_places: int, help_text: str, **kwargs: Any) -> serializers.DecimalField:
    # coerce_to_string=False keeps the Decimal for DecimalNumberJSONRenderer.
    return serializers.DecimalField(
        max_digits=max_digits,
        decimal_places=decimal_places,
        coerce_to_string=False,
        help_text=help_text,
        **kwargs,
    )


class FxQuoteSerializer(serializers.Serializer):
    quoteId = serializers.UUIDField(
        source="id",
        help_text="Pass as quoteId to POST /v1/customers/{customerId}/accounts/{accountId}/"
        "international-transfers before validUntil.",
    )
    currencyOne = serializers.CharField(source="currency_one", help_text="Sold by the customer.")
    currencyTwo = serializers.CharField(source="currency_two", help_text="Bought by the customer.")
    amountCurrency = serializers.CharField(source="amount_currency")
    amount = _number(18, 2, "In amountCurrency.")
    rate = _number(
        20, 8, "Price of 1 currencyOne in currencyTwo, spread included: at most the mid-market rate."
    )
    price = _number(
        18,
        2,
        "`amount` converted into the other currency, rounded to the cent against the customer "
        "(down when received, up when paid). null: no price for this quote, not an amount.",
        allow_null=True,
    )
    tenor = serializers.ChoiceField(choices=FxQuote.Tenor.values)
    valueDate = ValueDateField(source="value_date", help_text="00:00 UTC of the value date.")
    validUntil = serializers.DateTimeField(
        source="valid_until", help_text="The quote is dead after this instant."
    )


def _json(value: Any) -> str:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} cannot be written as a JSON number")
        return format(value, "f")
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(key))}:{_json(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


class DecimalNumberJSONRenderer(JSONRenderer):
    """JSON with every Decimal written as a bare number, digit for digit.

    Spec 2.6 types amount, rate and price as JSON numbers. DRF's encoder would pass
    them through float, which loses digits on large amounts; here the Decimal's own
    digits are written out (`100.50`, `1.16707500`). Used by this route only: the
    rest of the API sends money as decimal strings.
    """

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        return _json(data).encode("utf-8")


class FxQuoteView(ScopedAPIView):
    renderer_classes = [DecimalNumberJSONRenderer]

    @extend_schema(
        tags=["fx"],
        summary="Firm FX quote for an account",
        description=(
            "Prices converting between currencyOne (sold by the customer) and currencyTwo (bought). "
            "The quote is stored, lives 30 seconds (validUntil) and can be used once, by passing "
            "quoteId to POST /v1/customers/{customerId}/accounts/{accountId}/international-transfers. "
            "The `indicative` parameter cannot be set: any "
            "value gives 400. Value dates skip weekends; there is no holiday calendar. On a program "
            "without international payments (`program.payments.international` in GET "
            "/v1/capabilities), or for an account whose provider cannot quote: 422 PROVIDER_ERROR "
            "(treat as FX off)."
        ),
        parameters=[
            OpenApiParameter("accountId", str, OpenApiParameter.PATH),
            FxQuoteQuerySerializer,
        ],
        responses={
            200: envelope("FxQuoteResponse", FxQuoteSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                422,
                s400="VALIDATION_ERROR: a bad query parameter, an unknown currency, or `indicative` sent.",
                s404="RESOURCE_NOT_FOUND: no such account among the caller's.",
                s422="PROVIDER_ERROR: FX is off for this program or account.",
            ),
        },
    )
    def get(self, request, accountId: str):
        account = access_any_account(self.scope, accountId)
        query = FxQuoteQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        quote = fx_quote_create(
            account=account,
            currency_one=params["currencyOne"],
            currency_two=params["currencyTwo"],
            amount_currency=params["amountCurrency"],
            amount=params["amount"],
            tenor=params["tenor"],
            value_date=params.get("valueDate"),
        )
        return ok(FxQuoteSerializer(quote).data)
