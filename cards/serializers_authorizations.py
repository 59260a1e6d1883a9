"""What the card-spending routes take and answer."""

from datetime import UTC
from typing import Any

from rest_framework import serializers

from bankapi.clock import customer_now
from bankapi.codes import MINOR_UNITS_NOT_TWO, NOT_MONEY, SUPPORTED_CURRENCIES
from bankapi.http.serializers import (
    InputSerializer,
    MoneyField,
    OptionalTextField,
    RegexField,
    SingleLineTextField,
)
from cards.models import Card, CardAuthorization
from payments.card_decision import DECLINE_REASONS
from payments.fields import AmountField, ExactCharField
from payments.serializers_incoming import UtcTimestampField

ISO_CURRENCIES = sorted({*SUPPORTED_CURRENCIES, *MINOR_UNITS_NOT_TWO, *NOT_MONEY})


class IsoCurrencyField(ExactCharField):
    """Any ISO 4217 code: one the account does not hold is the authorization's
    decline (CURRENCY_NOT_SUPPORTED), not a bad request."""

    openapi = {"enum": ISO_CURRENCIES, "example": "GBP"}

    def to_internal_value(self, data: object) -> str:
        text = super().to_internal_value(data)
        if text not in ISO_CURRENCIES:
            raise serializers.ValidationError(
                "Must be an ISO 4217 currency code: three capital letters, e.g. GBP."
            )
        return text


class _DigitsField(RegexField):
    """A JSON string of the pattern: a JSON number is refused, not read as text."""

    default_error_messages = {"not_a_string": "Must be a string."}

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class AuthorizationCreateSerializer(InputSerializer):
    amount = AmountField(help_text="Decimal string above zero, at most 2 decimals.")
    currency = IsoCurrencyField(
        help_text=(
            "ISO 4217. A code other than the card account's currency is declined CURRENCY_NOT_SUPPORTED."
        )
    )
    merchantName = SingleLineTextField(min_length=1, max_length=70, help_text="The merchant.")
    merchantCategoryCode = _DigitsField(
        r"^[0-9]{4}$",
        trim_whitespace=False,
        required=False,
        help_text="ISO 18245 merchant category code: 4 digits.",
    )


class AuthorizationClearSerializer(InputSerializer):
    amount = AmountField(
        required=False, help_text="At most the authorized amount (default: all of it); more is 400."
    )


def authorization_status_now(authorization: CardAuthorization) -> str:
    """Its status as the customer's time reads it: PENDING past its expiry is EXPIRED."""
    if (
        authorization.status == CardAuthorization.Status.PENDING
        and authorization.expires_at is not None
        and authorization.expires_at <= customer_now(authorization.customer_id)
    ):
        return CardAuthorization.Status.EXPIRED
    return authorization.status


class _StatusNowField(serializers.ChoiceField):
    def get_attribute(self, instance: CardAuthorization) -> str:
        return authorization_status_now(instance)


class _OptionalChoiceField(serializers.ChoiceField):
    """A code out, null when empty."""

    def to_representation(self, value: str) -> str | None:  # type: ignore[override]  # null out
        return value or None


class CardAuthorizationSerializer(serializers.Serializer):
    authorizationId = serializers.UUIDField(source="id")
    cardId = serializers.UUIDField(source="card_id")
    accountId = serializers.UUIDField(source="account_id")
    amount = MoneyField(help_text="Decimal string.")
    currency = serializers.CharField()
    merchantName = serializers.CharField(source="merchant_name")
    merchantCategoryCode = OptionalTextField(
        source="merchant_category_code", help_text="Null when not given."
    )
    status = _StatusNowField(
        choices=CardAuthorization.Status.choices,
        help_text="A PENDING authorization past its expiresAt reads EXPIRED at once.",
    )
    declineReason = _OptionalChoiceField(
        source="decline_reason",
        choices=list(DECLINE_REASONS),
        allow_null=True,
        help_text="Why it was declined, in the order the rules are checked; null when approved.",
    )
    clearedAmount = MoneyField(source="cleared_amount", allow_null=True, help_text="Null until cleared.")
    createdAt = UtcTimestampField(source="authorized_at")
    expiresAt = UtcTimestampField(source="expires_at", allow_null=True, help_text="Null when declined.")


def _utc(moment: Any) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def card_authorization_data(authorization: CardAuthorization) -> dict[str, Any]:
    """`CardAuthorizationSerializer(authorization).data` in plain code, for the
    authorization route's answer and the events (the serializer stays its
    definition and its document; tests/cards/test_authorization_presenter.py
    holds the two equal)."""
    cleared = authorization.cleared_amount
    return {
        "authorizationId": str(authorization.id),
        "cardId": str(authorization.card_id),
        "accountId": str(authorization.account_id),
        "amount": f"{authorization.amount:.2f}",
        "currency": str(authorization.currency),
        "merchantName": str(authorization.merchant_name),
        "merchantCategoryCode": authorization.merchant_category_code or None,
        "status": str(authorization_status_now(authorization)),
        "declineReason": authorization.decline_reason or None,
        "clearedAmount": None if cleared is None else f"{cleared:.2f}",
        "createdAt": _utc(authorization.authorized_at),
        "expiresAt": _utc(authorization.expires_at),
    }


class CardAuthorizationListSerializer(serializers.Serializer):
    authorizations = CardAuthorizationSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True, help_text="Pass as `nextToken` for the next page.")


class SandboxCardSerializer(serializers.Serializer):
    cardId = serializers.UUIDField(source="id")
    accountId = serializers.UUIDField(source="account_id")
    status = serializers.ChoiceField(choices=Card.Status.choices)
    lastFour = serializers.CharField(source="last_four")
    expiryMonth = serializers.IntegerField(source="expiry_month", min_value=1, max_value=12)
    expiryYear = serializers.IntegerField(source="expiry_year")
    nameOnCard = serializers.CharField(source="name_on_card")
