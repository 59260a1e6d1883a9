"""The field types of the payment routes' bodies: text checked as sent (amounts,
currencies, ids, days, IBANs) and rates rendered as decimal strings. Each field
states its rule for the OpenAPI document (`openapi`) next to the check."""

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from rest_framework import serializers

from bankapi.codes import IBAN_PATTERN, SUPPORTED_CURRENCIES, currency_problem, iban_problem, normalise_iban
from bankapi.formats import CALENDAR_DAY, ISO_DATE, ISO_DATE_TIME, uuid_parse
from bankapi.http.serializers import StrictCharField
from payments.formats import AMOUNT, CENT, MAX_AMOUNT, POSITIVE_AMOUNT_PATTERN


class ExactCharField(StrictCharField):
    """A string checked as sent: whitespace around it fails its format rather than
    being trimmed off first."""

    def __init__(self, **kwargs):
        super().__init__(trim_whitespace=False, **kwargs)


class AmountField(ExactCharField):
    """A decimal string of ASCII digits (`[0-9]+(\\.[0-9]{1,2})?`) above zero; a JSON
    number is refused."""

    default_error_messages = {
        "invalid": 'Must be a decimal string such as "10.50".',
        "pattern": 'Must be a decimal string with at most 2 decimal places, e.g. "10.50".',
        "positive": "Must be above zero.",
        "too_large": "Too large.",
    }
    # The same rule for clients: digits, at most 2 decimals, above zero, at most
    # 9999999999999999.99 (leading zeros allowed).
    openapi = {
        "pattern": POSITIVE_AMOUNT_PATTERN,
        "example": "10.50",
    }

    def to_internal_value(self, data: Any) -> Decimal:  # type: ignore[override]  # a parsed value
        text = super().to_internal_value(data)
        if not AMOUNT.fullmatch(text):
            self.fail("pattern")
        value = Decimal(text)
        if value <= 0:
            self.fail("positive")
        if value > MAX_AMOUNT:
            self.fail("too_large")
        return value.quantize(CENT)

    def to_representation(self, value) -> str:
        return f"{value:.2f}"


class CurrencyField(ExactCharField):
    """An ISO 4217 code with 2 minor units (`bankapi.codes.currency_problem`)."""

    openapi = {"enum": list(SUPPORTED_CURRENCIES), "example": "GBP"}

    def to_internal_value(self, data) -> str:
        text = super().to_internal_value(data)
        problem = currency_problem(text)
        if problem:
            raise serializers.ValidationError(problem)
        return text


class UuidStringField(ExactCharField):
    default_error_messages = {"uuid": "Must be a UUID string (8-4-4-4-12 hex digits)."}
    openapi = {
        "format": "uuid",
        "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    }

    def to_internal_value(self, data: Any) -> uuid.UUID:  # type: ignore[override]  # a parsed value
        text = super().to_internal_value(data)
        try:
            return uuid_parse(text)
        except ValueError:
            self.fail("uuid")


class UtcDayField(ExactCharField):
    """`YYYY-MM-DD` or an ISO 8601 date-time (`YYYY-MM-DDThh:mm[:ss[.fff]]`, then `Z`,
    an offset such as `+02:00`, or nothing); a date-time with an offset is turned
    into UTC first (one without is read as UTC), then only the day counts."""

    default_error_messages = {
        "date": "Must be a date (YYYY-MM-DD) or an ISO 8601 date-time (YYYY-MM-DDThh:mm:ssZ).",
        "range": "Its UTC day must be between 0001-01-01 and 9999-12-31.",
    }
    openapi = {
        "pattern": (
            f"^{CALENDAR_DAY}"
            "([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.,][0-9]{1,9})?)?"
            "(Z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)?)?$"
        ),
        "example": "2026-12-24",
    }

    def to_internal_value(self, data: Any) -> date:  # type: ignore[override]  # a parsed value
        text = super().to_internal_value(data)
        try:
            if ISO_DATE.fullmatch(text):
                return date.fromisoformat(text)
            moment = datetime.fromisoformat(text) if ISO_DATE_TIME.fullmatch(text) else None
        except ValueError:
            # The right shape but not in the calendar: 30 February, hour 24, ...
            moment = None
        if moment is None:
            self.fail("date")
        if moment.tzinfo is None:
            return moment.date()
        try:
            return moment.astimezone(UTC).date()
        except OverflowError:
            # 9999-12-31T23:00:00-05:00 is in year 10000 in UTC, 0001-01-01T00:00:00+05:00
            # in year 0: neither is a date Python (or the database) can hold.
            self.fail("range")


class IbanField(ExactCharField):
    openapi = {"pattern": IBAN_PATTERN, "example": "GB82WEST12345698765432"}

    def to_internal_value(self, data) -> str:
        text = super().to_internal_value(data)
        problem = iban_problem(text)
        if problem:
            raise serializers.ValidationError(problem)
        return normalise_iban(text)


class RateField(serializers.CharField):
    """A rate out as a decimal string without trailing zeros (never in exponent
    form: a rate of 190 is "190", not "1.9E+2")."""

    def to_representation(self, value: Decimal) -> str:  # type: ignore[override]  # renders a Decimal
        return format(value.normalize(), "f")
