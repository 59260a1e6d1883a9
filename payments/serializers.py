"""Request and response bodies of the payment routes."""

from typing import Any

from rest_framework import serializers

from bankapi.banking import IBAN_HELP, PayeeSerializer
from bankapi.http.serializers import (
    ConstantField,
    InputSerializer,
    MoneyField,
    OptionalTextField,
    SingleLineTextField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    TimestampField,
)
from payments.fields import AmountField, CurrencyField, IbanField, RateField, UtcDayField, UuidStringField
from payments.formats import REFERENCE_MAX
from payments.payees import IbanAccount, Payee, PayeeAccount, UkAccount
from payments.rules import account_reference_error, virtual_iban_error


def payee_from_wire(data: dict) -> Payee:
    """A payee as `PayeeSerializer` validated it (`{name, account, accountType?}`,
    the account normalised), in the domain's names."""
    account = data["account"]
    found: PayeeAccount = (
        UkAccount(sort_code=account["sortCode"], account_number=account["accountNumber"])
        if account["type"] == "uk"
        else IbanAccount(iban=account["iban"], bic=account.get("bic", ""))
    )
    return Payee(name=data["name"], account=found, payee_type=data.get("accountType", ""))


FREQUENCIES = ["NEVER", "DAILY", "WEEKLY", "FORTNIGHTLY", "MONTHLY"]
CHARGE_BEARERS = ["SHA", "OUR", "BEN"]


REFERENCE_HELP = (
    "Statement reference. Its length and characters must fit the account's rules "
    "(`accounts[].payments.reference` in GET /v1/capabilities: min, max, charset)."
)


class CryptoQuoteSerializer(serializers.Serializer):
    quoteId = UuidStringField(help_text="A live quote from GET /v1/accounts/{accountId}/fx/quote.")


class PaymentCreateSerializer(InputSerializer):
    """A payment from the account: to a saved beneficiary, to inline payee details,
    or funded through a crypto quote (exactly one of the three)."""

    # Validated with the account in the serializer context: the currency default
    # and the reference rules are the account's.
    exactly_one_of = ("beneficiaryId", "payee", "cryptoQuote")
    # A quote lives 30 seconds: a quote-funded payment cannot be scheduled.
    refused_combinations = (
        {"required": ["cryptoQuote", "scheduledDate"]},
        {"required": ["cryptoQuote", "frequency"], "properties": {"frequency": {"not": {"enum": ["NEVER"]}}}},
    )

    amount = AmountField(help_text='Decimal string, at most 2 decimal places, above zero: "10.50".')
    currency = CurrencyField(
        required=False,
        help_text="ISO 4217, with 2 decimal places; defaults to, and must be, the account currency.",
    )
    reference = SingleLineTextField(
        max_length=REFERENCE_MAX, spaces_are_blank=False, help_text=REFERENCE_HELP
    )
    purpose = SingleLineTextField(required=False, min_length=1, max_length=140, help_text="Purpose code.")
    beneficiaryId = StrictCharField(
        required=False, max_length=64, help_text="A saved beneficiary of the customer."
    )
    payee = PayeeSerializer(required=False, help_text="Inline payee details instead of beneficiaryId.")
    cryptoQuote = CryptoQuoteSerializer(
        required=False,
        help_text=(
            "A crypto-funded payment, instead of beneficiaryId or payee (exactly one of the three "
            "is sent): `quoteId` names a live quote from GET /v1/accounts/{accountId}/fx/quote "
            "that sells the account currency. The account pays the quote's sell amount (plus the "
            "fee); the quote's provider delivers the bought amount to the customer's own wallet "
            "registered with it, so no payee is sent. `amount` must equal the amount the quote "
            "buys and `currency`, if sent, its buy currency. Paid at once: it cannot be scheduled."
        ),
    )
    chargeBearer = StrictChoiceField(choices=CHARGE_BEARERS, required=False)
    scheduledDate = UtcDayField(
        required=False,
        help_text=(
            "Date or date-time; only its UTC day counts. A later day than today creates a "
            "schedule (the answer carries scheduleId, no requestId); today or earlier pays at once."
        ),
    )
    frequency = StrictChoiceField(
        choices=FREQUENCIES, required=False, help_text="Omit or NEVER for a one-off."
    )
    idempotencyKey = UuidStringField(required=False, help_text="UUID; the Idempotency-Key header wins.")
    virtualIban = IbanField(
        required=False,
        help_text=(
            f"Source virtual IBAN; for a domestic GBP payment (UK payee) it must start with GB. {IBAN_HELP}"
        ),
    )
    feeWaived = StrictBooleanField(required=False, default=False, help_text="Send with the fee waived.")

    def validate(self, data: dict) -> dict:
        account = self.context["account"]
        sources = [name for name in ("beneficiaryId", "payee", "cryptoQuote") if name in data]
        if len(sources) != 1:
            message = (
                "Send exactly one of beneficiaryId, payee or cryptoQuote."
                if sources
                else "A payee is required: send beneficiaryId, payee or cryptoQuote."
            )
            raise serializers.ValidationError({"beneficiaryId": message})
        errors: dict[str, str] = {}
        if "cryptoQuote" in data and ("scheduledDate" in data or data.get("frequency", "NEVER") != "NEVER"):
            errors["cryptoQuote"] = (
                "A quote lives 30 seconds: a quote-funded payment is paid at once and cannot be scheduled."
            )
        if "cryptoQuote" not in data:
            data.setdefault("currency", account.currency)
            if data["currency"] != account.currency:
                errors["currency"] = (
                    f"Payments from this account are made in {account.currency}. To pay in "
                    f"{data['currency']}, get a quote and use POST "
                    "/v1/customers/{customerId}/accounts/{accountId}/international-transfers."
                )
        reference_error = account_reference_error(account, data["reference"])
        if reference_error:
            errors["reference"] = reference_error
        iban_error = virtual_iban_error(
            virtual_iban=data.get("virtualIban", ""),
            currency=data.get("currency", ""),
            payee=payee_from_wire(data["payee"]) if "payee" in data else None,
        )
        if iban_error:
            errors["virtualIban"] = iban_error
        if errors:
            raise serializers.ValidationError(errors)
        return data


# Rendered from a PaymentSubmission.
class BankTransferSerializer(serializers.Serializer):
    status = ConstantField("success", help_text="Always `success`: accepted, not settled.")
    # A missing payment request or schedule leaves its field out.
    requestId = serializers.UUIDField(
        source="payment_request.id",
        required=False,
        help_text="The payment request; absent when only a schedule was created.",
    )
    scheduleId = serializers.UUIDField(
        source="schedule.id",
        required=False,
        help_text="The schedule, when scheduledDate is a later day or a frequency is set.",
    )


class PaymentCreatedSerializer(serializers.Serializer):
    bankTransfer = BankTransferSerializer(source="*")


class PaymentRequestSerializer(serializers.Serializer):
    requestId = serializers.UUIDField(source="id")
    status = serializers.ChoiceField(
        choices=["PENDING", "PENDING_TM", "SETTLED", "FAILED", "RETURNED"],
        help_text=(
            "PENDING: accepted, waiting to settle; PENDING_TM: held for compliance review; "
            "SETTLED: paid out (it then leaves the requests list for the transactions); "
            "FAILED: refused or reversed after acceptance, funds returned (see failureReason); "
            "RETURNED: settled, then sent back by the payee's bank (the amount credited back, "
            "listed as a transaction with returnOf)."
        ),
    )
    amount = MoneyField(help_text="Decimal string, payment currency.")
    currency = serializers.CharField()
    reference = serializers.CharField()
    beneficiaryId = serializers.UUIDField(source="beneficiary_id", allow_null=True)
    scheduleId = serializers.UUIDField(
        source="schedule_id", allow_null=True, help_text="The schedule that made this payment."
    )
    failureReason = OptionalTextField(source="failure_reason")
    createdDateTime = TimestampField(source="created_at")
    updatedAt = TimestampField(source="updated_at")


def payment_created_data(submission: Any) -> dict[str, Any]:
    """`PaymentCreatedSerializer(submission).data` in plain code, for the payment
    route's answer (the serializer stays its definition and its document;
    tests/payments/test_plain_presenters.py holds the two equal)."""
    transfer: dict[str, Any] = {"status": "success"}
    if submission.payment_request is not None:
        transfer["requestId"] = str(submission.payment_request.id)
    if submission.schedule is not None:
        transfer["scheduleId"] = str(submission.schedule.id)
    return {"bankTransfer": transfer}


def payment_request_data(request: Any) -> dict[str, Any]:
    """`PaymentRequestSerializer(request).data` in plain code, for the event every
    accepted payment writes (see `payment_created_data`)."""
    return {
        "requestId": str(request.id),
        "status": str(request.status),
        "amount": f"{request.amount:.2f}",
        "currency": str(request.currency),
        "reference": str(request.reference),
        "beneficiaryId": None if request.beneficiary_id is None else str(request.beneficiary_id),
        "scheduleId": None if request.schedule_id is None else str(request.schedule_id),
        "failureReason": request.failure_reason or None,
        "createdDateTime": request.created_at.isoformat(),
        "updatedAt": request.updated_at.isoformat(),
    }


class PaymentRequestListSerializer(serializers.Serializer):
    paymentRequests = PaymentRequestSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True, help_text="Pass as `nextToken` for the next page.")


class TransactionSerializer(serializers.Serializer):
    transactionId = serializers.UUIDField(source="id")
    requestId = serializers.UUIDField(
        source="payment_request_id", allow_null=True, help_text="The payment booked, if any."
    )
    amount = MoneyField(help_text="Decimal string, account currency, always positive.")
    currency = serializers.CharField()
    direction = serializers.ChoiceField(choices=["DEBIT", "CREDIT"])
    reference = serializers.CharField()
    bookedAt = TimestampField(source="booked_at")
    returnOf = serializers.UUIDField(
        source="return_of_id",
        allow_null=True,
        help_text="On a CREDIT that gives back a returned payment: that payment's requestId; else null.",
    )
    incomingPaymentId = serializers.UUIDField(
        source="incoming_payment_id",
        allow_null=True,
        help_text="On a CREDIT from another bank: that incoming payment; else null.",
    )
    cardAuthorizationId = serializers.UUIDField(
        source="card_authorization_id",
        allow_null=True,
        help_text="On a DEBIT clearing a card authorization: that authorization; else null.",
    )


class TransactionListSerializer(serializers.Serializer):
    transactions = TransactionSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True, help_text="Pass as `nextToken` for the next page.")


class PaymentFailSerializer(InputSerializer):
    reason = SingleLineTextField(
        required=False, min_length=1, max_length=200, help_text="Shown as failureReason."
    )


class SandboxPaymentRequestSerializer(serializers.Serializer):
    paymentRequest = PaymentRequestSerializer(source="*")


class LastRunSerializer(serializers.Serializer):
    date = serializers.DateField(source="run_date", help_text="The UTC day the run was for.")
    outcome = serializers.ChoiceField(
        choices=["PAID", "HELD", "FAILED"],
        help_text="PAID: payment accepted; HELD: accepted, held for compliance review; FAILED: stopped "
        "before acceptance (see reason).",
    )
    requestId = serializers.UUIDField(source="payment_request_id", allow_null=True)
    reason = OptionalTextField(help_text="Why the run failed, e.g. INSUFFICIENT_FUNDS.")


class ScheduledPaymentSerializer(serializers.Serializer):
    scheduleId = serializers.UUIDField(source="id")
    status = serializers.ChoiceField(choices=["ACTIVE", "CANCELLED", "COMPLETED"])
    frequency = serializers.ChoiceField(choices=FREQUENCIES)
    scheduledDate = serializers.DateField(source="scheduled_date", help_text="First day of the series (UTC).")
    nextRunDate = serializers.DateField(
        source="next_run_date", allow_null=True, help_text="Null once the schedule has ended."
    )
    amount = MoneyField(help_text="Decimal string.")
    currency = serializers.CharField()
    reference = serializers.CharField()
    lastRun = LastRunSerializer(source="last_run", allow_null=True)


class ScheduledPaymentListSerializer(serializers.Serializer):
    scheduledPayments = ScheduledPaymentSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True, help_text="Pass as `nextToken` for the next page.")


class ScheduledPaymentCancelledSerializer(serializers.Serializer):
    scheduledPayment = ScheduledPaymentSerializer(source="*")


class InternationalTransferCreateSerializer(InputSerializer):
    """A payment in another currency, converted at a live FX quote."""

    exactly_one_of = ("beneficiaryId", "payee")

    # Validated with the account in the serializer context, for the reference rules.

    quoteId = UuidStringField(
        help_text="A live quote from GET /v1/accounts/{accountId}/fx/quote selling the account currency."
    )
    beneficiaryId = StrictCharField(required=False, max_length=64, help_text="A saved beneficiary.")
    payee = PayeeSerializer(required=False, help_text="Inline payee details instead of beneficiaryId.")
    reference = SingleLineTextField(
        max_length=REFERENCE_MAX, spaces_are_blank=False, help_text=REFERENCE_HELP
    )
    purpose = SingleLineTextField(required=False, min_length=1, max_length=140, help_text="Purpose code.")
    chargeBearer = StrictChoiceField(choices=CHARGE_BEARERS, required=False)
    idempotencyKey = UuidStringField(required=False, help_text="UUID; the Idempotency-Key header wins.")

    def validate(self, data: dict) -> dict:
        if ("beneficiaryId" in data) == ("payee" in data):
            raise serializers.ValidationError(
                {"beneficiaryId": "Send exactly one of beneficiaryId or payee."}
            )
        reference_error = account_reference_error(self.context["account"], data["reference"])
        if reference_error:
            raise serializers.ValidationError({"reference": reference_error})
        return data


# Rendered from the transfer's PaymentRequest.
class InternationalTransferSerializer(serializers.Serializer):
    status = ConstantField("success", help_text="Always `success`: accepted, not settled.")
    requestId = serializers.UUIDField(
        source="id", help_text="The payment request, listed on payment-requests."
    )
    quoteId = serializers.UUIDField(source="fx_quote_id")
    sellAmount = MoneyField(
        source="debit_amount", help_text="Debited from the account (fee excluded), account currency."
    )
    sellCurrency = serializers.CharField(source="account.currency")
    buyAmount = MoneyField(source="amount", help_text="Paid to the payee, in the quote's buy currency.")
    buyCurrency = serializers.CharField(source="currency")
    rate = RateField(
        source="fx_quote.rate", help_text="The quote's rate: price of 1 sellCurrency in buyCurrency."
    )


class InternationalTransferCreatedSerializer(serializers.Serializer):
    internationalTransfer = InternationalTransferSerializer(source="*")
