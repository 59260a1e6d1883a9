"""Bodies and answers of the sandbox's customers and test clocks."""

from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from bankapi.formats import ISO_DATE_TIME
from bankapi.http.serializers import InputSerializer, SingleLineTextField, StrictCharField
from bankapi.models import TestClock
from bankapi.test_clocks import clock_status, utc_text


class TimestampWithOffsetField(StrictCharField):
    """An ISO 8601 timestamp with `Z` or an offset, parsed to an aware datetime in UTC."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(openapi={"format": "date-time"}, **kwargs)

    def to_internal_value(self, data: Any) -> datetime:  # type: ignore[override]
        text = super().to_internal_value(data)
        if not ISO_DATE_TIME.fullmatch(text):
            raise serializers.ValidationError("Must be an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z.")
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                raise serializers.ValidationError("Must carry Z or an offset.")
            return moment.astimezone(UTC)
        except (ValueError, OverflowError):
            raise serializers.ValidationError("Must be a real date and time.")


class ClockCreateSerializer(InputSerializer):
    frozenTime = TimestampWithOffsetField(
        help_text="ISO 8601 with Z or an offset, within 366 days of now either way: what the clock reads."
    )
    name = SingleLineTextField(required=False, allow_null=True, min_length=1, max_length=70)


class ClockAdvanceSerializer(InputSerializer):
    to = TimestampWithOffsetField(
        help_text="ISO 8601 with Z or an offset: after the clock's frozenTime, at most 366 days after it."
    )


class ClockSerializer(serializers.Serializer):
    testClockId = serializers.UUIDField(source="id")
    name = serializers.CharField(allow_null=True)
    frozenTime = serializers.SerializerMethodField(
        help_text="What the clock reads (UTC, Z): the last moment an advance fully ran."
    )
    status = serializers.SerializerMethodField(
        help_text="`advancing` while an advance runs (for at most 90 s after its process died), else `ready`."
    )
    createdAt = serializers.SerializerMethodField(help_text="Real time (UTC, Z).")

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_frozenTime(self, clock: TestClock) -> str:
        return utc_text(clock.frozen_time)

    @extend_schema_field({"type": "string", "enum": ["ready", "advancing"]})
    def get_status(self, clock: TestClock) -> str:
        return clock_status(clock)

    @extend_schema_field(OpenApiTypes.DATETIME)
    def get_createdAt(self, clock: TestClock) -> str:
        return utc_text(clock.created_at)


class ClockListSerializer(serializers.Serializer):
    testClocks = ClockSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True)


class CustomerCreateSerializer(InputSerializer):
    name = SingleLineTextField(
        required=False, min_length=1, max_length=70, help_text="Default `Sandbox Customer <n>`."
    )
    testClockId = StrictCharField(
        required=False,
        allow_null=True,
        help_text="A test clock of the program: the customer lives at its time, for good.",
    )


class CustomerCreatedSerializer(serializers.Serializer):
    customerId = serializers.UUIDField()
    name = serializers.CharField()
    email = serializers.EmailField(help_text="Generated and unique; the user signs in with it.")
    password = serializers.CharField(help_text="Shown in this answer and its replay only.")
    totpSecret = serializers.CharField(
        help_text="Base32 TOTP secret; shown in this answer and its replay only."
    )
    pin = serializers.CharField(
        allow_null=True, help_text="The step-up PIN on a program with PIN confirmation, else null."
    )
    accountId = serializers.UUIDField(help_text="GBP, balance 100000.00, reference max 140.")
    accountIban = serializers.CharField()
    eurAccountId = serializers.UUIDField(help_text="EUR, balance 100000.00.")
    eurAccountIban = serializers.CharField()
    beneficiaryId = serializers.UUIDField()
    cardId = serializers.UUIDField(help_text="An ACTIVE card on accountId.")
    testClockId = serializers.UUIDField(allow_null=True)
