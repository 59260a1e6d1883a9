"""What the incoming-payment routes take and answer."""

from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers

from bankapi.http.serializers import (
    InputSerializer,
    MoneyField,
    OptionalTextField,
    SingleLineTextField,
)
from bankapi.identifiers import SEPA_IDENTIFIER_CHARACTERS, sepa_identifier_problem
from payments.fields import AmountField, CurrencyField, IbanField


class UtcTimestampField(serializers.DateTimeField):
    """A moment out, in UTC with `Z` (`2026-12-07T18:00:00.123456Z`)."""

    def to_representation(self, value: datetime) -> str:
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class EndToEndIdField(SingleLineTextField):
    """An end-to-end id: the SEPA character set of identifiers, 1 to 35 characters."""

    openapi = {
        "pattern": r"^(?!.*//)[A-Za-z0-9?:().,'+ -]([A-Za-z0-9/?:().,'+ -]{0,33}[A-Za-z0-9?:().,'+ -])?$"
    }

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        problem = sepa_identifier_problem(text)
        if problem is not None:
            raise serializers.ValidationError(problem)
        return text


class IncomingPaymentCreateSerializer(InputSerializer):
    creditorIban = serializers.CharField(
        help_text=(
            "The IBAN of an account of the program's sandbox (spaces and case do not matter). "
            "Another IBAN, valid or not, is 400 naming creditorIban."
        ),
        max_length=64,
    )
    amount = AmountField(help_text="Decimal string above zero, at most 2 decimals.")
    currency = CurrencyField(help_text="ISO 4217; must be the credited account's currency (else 400).")
    debtorName = SingleLineTextField(min_length=1, max_length=140, help_text="Who sent the money.")
    debtorIban = IbanField(required=False, help_text="The debtor's account, a valid IBAN.")
    endToEndId = EndToEndIdField(
        required=False,
        min_length=1,
        max_length=35,
        help_text=(
            f"The sender's end-to-end id: {SEPA_IDENTIFIER_CHARACTERS}; not starting or ending with "
            "/, no //; at most 35 characters. Default NOTPROVIDED."
        ),
    )
    remittanceInformation = SingleLineTextField(
        required=False,
        min_length=1,
        max_length=140,
        help_text="Unstructured remittance information (shown as the transaction's reference).",
    )


class IncomingPaymentSerializer(serializers.Serializer):
    incomingPaymentId = serializers.UUIDField(source="id")
    customerId = serializers.UUIDField(source="customer_id")
    accountId = serializers.UUIDField(source="account_id")
    amount = MoneyField(help_text="Decimal string, the account's currency.")
    currency = serializers.CharField()
    debtorName = serializers.CharField(source="debtor_name")
    debtorIban = OptionalTextField(source="debtor_iban", help_text="Null when not given.")
    endToEndId = serializers.CharField(source="end_to_end_id", help_text="NOTPROVIDED when not given.")
    remittanceInformation = OptionalTextField(
        source="remittance_information", help_text="Null when not given."
    )
    receivedAt = UtcTimestampField(
        source="received_at", help_text="When it was booked (the customer's time)."
    )


class IncomingPaymentListSerializer(serializers.Serializer):
    incomingPayments = IncomingPaymentSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True, help_text="Pass as `nextToken` for the next page.")
