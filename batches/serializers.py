"""Request and response shapes of the batch routes (validation and OpenAPI)."""

import re
import uuid
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from authn.serializers import (
    ConfirmationSerializer,
    PasskeyConfirmationSerializer,
    PinConfirmationSerializer,
    TotpConfirmationSerializer,
)
from authn.services import stepup
from bankapi.banking import AccountObjectSerializer, PayeeSerializer
from bankapi.http.schema import TEXT_PATTERN
from bankapi.http.serializers import (
    InputSerializer,
    RegexField,
    StrictCharField,
    StrictChoiceField,
    unknown_fields,
)
from batches.rules import MAX_PAYMENTS, payments_shape_errors

UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
ACTIONS = ["verify", "initiate", "passkey-challenge", "submit"]
ITEM_STATUSES = ["QUEUED", "PROCESSING", "SUCCESS", "FAILED"]
DRAFT_STATUSES = ["DRAFT", "EXPIRED"]
PAYLOAD_STATUSES = ["PENDING", "COMPLETE"]
BATCH_STATUSES = [
    "CREATED",
    "FUNDING_PENDING",
    "FUNDED",
    "FUNDING_FAILED",
    "QUEUED",
    "PROCESSING",
    "COMPLETED",
    "PARTIALLY_FAILED",
    "FAILED",
]


class BatchPayerSerializer(serializers.Serializer):
    account = AccountObjectSerializer(
        help_text="An account of a customer the caller acts for (a custodian: any of its customers)."
    )


class BatchPaymentSerializer(serializers.Serializer):
    """One payment. Only the JSON shape is a 400; a value breaking a rule makes
    the item invalid, with its reasons, and the others go on."""

    payer = BatchPayerSerializer()
    payee = PayeeSerializer()
    reference = serializers.CharField(
        help_text="Within the payer account's reference rules (min, max, charset in GET /v1/capabilities)."
    )
    amount = RegexField(
        r"^[0-9]+(\.[0-9]{1,2})?$",
        help_text="Decimal string above 0, at most 2 decimals, in the payer's currency.",
    )
    endToEndId = serializers.CharField(
        required=False, help_text="Drafts made from an ISO 20022 file: the transaction's PmtId/EndToEndId."
    )
    currency = serializers.CharField(
        required=False, help_text="Drafts made from an ISO 20022 file: the amount's currency (Ccy)."
    )


# The request's items, as the document states them: only their JSON shape is a 400
# (objects, strings, no unknown key; batches.rules.payments_shape_errors), so no key
# is required and no value has a pattern there; BatchPayment shows the rules.


@extend_schema_field({"type": "string", "pattern": TEXT_PATTERN})
class _SentString(serializers.Field):
    """A JSON string without a NUL: its value is an item rule, not a 400."""


class BatchAccountSentSerializer(serializers.Serializer):
    """An account as sent in a batch item: `{type, sortCode, accountNumber}` or `{type, iban, bic?}`."""

    type = _SentString(required=False, help_text="uk or iban.")
    sortCode = _SentString(required=False, help_text="With type uk: 6 digits (hyphens allowed).")
    accountNumber = _SentString(required=False, help_text="With type uk: 8 digits.")
    iban = _SentString(required=False, help_text="With type iban: a valid IBAN.")
    bic = _SentString(required=False, help_text="Optional, with type iban: 8 or 11 characters.")


class BatchPayerSentSerializer(serializers.Serializer):
    account = BatchAccountSentSerializer(
        required=False,
        help_text="An account of a customer the caller acts for (a custodian: any of its customers).",
    )


class BatchPayeeSentSerializer(serializers.Serializer):
    name = _SentString(
        required=False,
        help_text="At most 140 characters, on a single line: no control or format characters "
        "(Unicode categories Cc, Cf, Zl, Zp: tab, newline, U+0085, bidi overrides and isolates, "
        "zero-width characters, U+FEFF).",
    )
    account = BatchAccountSentSerializer(required=False)
    accountType = _SentString(required=False, help_text="Optional: CONSUMER or BUSINESS.")


class BatchPaymentSentSerializer(serializers.Serializer):
    """One payment as sent. Only its JSON shape is a 400; a missing or wrong value
    makes the item invalid, with its reasons (verify lists them), and the others go
    on. Each valid item has the shape of BatchPayment."""

    payer = BatchPayerSentSerializer(required=False)
    payee = BatchPayeeSentSerializer(required=False)
    reference = _SentString(
        required=False,
        help_text="Within the payer account's reference rules (min, max, charset in GET /v1/capabilities), "
        "on a single line: no control or format characters (Unicode categories Cc, Cf, Zl, Zp).",
    )
    amount = _SentString(
        required=False, help_text="Decimal string above 0, at most 2 decimals, in the payer's currency."
    )


@extend_schema_field(BatchPaymentSentSerializer(many=True))
class PaymentsField(serializers.Field):
    """The payments list: its JSON shape checked here, its rules per item later."""

    openapi = {"minItems": 1, "maxItems": MAX_PAYMENTS}

    def to_internal_value(self, data: Any) -> list[dict]:
        errors = payments_shape_errors(data, path="")
        if errors and not errors[0].field:
            raise serializers.ValidationError(errors[0].message)
        if errors:
            raise serializers.ValidationError({error.field.lstrip("."): [error.message] for error in errors})
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class ScaChallengeSerializer(serializers.Serializer):
    id = StrictCharField(max_length=64, help_text="As initiate answered it.")
    expiresAt = serializers.DateTimeField(help_text="As initiate answered it.")


@extend_schema_field(ConfirmationSerializer)
class ConfirmationField(serializers.Field):
    """The step-up confirmation, with no key its method does not take."""

    SHAPES = {
        stepup.PASSKEY: PasskeyConfirmationSerializer,
        stepup.TOTP: TotpConfirmationSerializer,
        stepup.PIN: PinConfirmationSerializer,
    }

    def to_internal_value(self, data: Any) -> dict:
        value = ConfirmationSerializer().to_internal_value(data)
        unknown = unknown_fields(self.SHAPES[value["method"]](), data)
        if unknown:
            raise serializers.ValidationError(unknown)
        return value

    def to_representation(self, value: Any) -> Any:
        return value


class IdempotencyKeyField(StrictCharField):
    """A UUID in its canonical 8-4-4-4-12 form."""

    default_error_messages = {**StrictCharField.default_error_messages, "uuid": "Must be a UUID."}
    openapi = {"format": "uuid", "pattern": f"^{UUID_TEXT.pattern}$"}

    # drf-stubs pin a CharField's internal value to str; this one parses the text further.
    def to_internal_value(self, data: Any) -> uuid.UUID:  # type: ignore[override]
        text = super().to_internal_value(data)
        if not UUID_TEXT.fullmatch(text):
            self.fail("uuid")
        return uuid.UUID(text)


class BatchActionSerializer(InputSerializer):
    """The body of POST batch-payments; which fields are required depends on `action`."""

    REQUIRED = {
        "verify": ("payments",),
        "initiate": (),
        "passkey-challenge": ("scaChallenge",),
        "submit": ("scaChallenge", "confirmation"),
    }
    # initiate and submit take `payments`, or only `batchId` for a draft made from
    # a file (whose payments are the file's; checked by the service).
    PAYMENTS_OR_DRAFT = ("initiate", "submit")

    # For the OpenAPI document: a body without a key its action requires is refused.
    refused_combinations = tuple(
        {"properties": {"action": {"enum": [action]}}, "not": {"required": list(names)}}
        for action, names in REQUIRED.items()
        if names
    ) + tuple(
        {
            "properties": {"action": {"enum": [action]}},
            "not": {"anyOf": [{"required": ["payments"]}, {"required": ["batchId"]}]},
        }
        for action in PAYMENTS_OR_DRAFT
    )

    action = StrictChoiceField(choices=ACTIONS)
    payments = PaymentsField(
        required=False,
        help_text=f"verify, initiate and submit: 1 to {MAX_PAYMENTS} payments. Payers may belong "
        "to different customers of the caller's custodian. Not sent (400 if sent) to initiate or submit "
        "a draft made from an ISO 20022 file: its payments are the file's.",
    )
    batchId = StrictCharField(
        required=False,
        max_length=64,
        help_text="initiate and submit: the draft's id (verify's requestId) to submit that draft.",
    )
    scaChallenge = ScaChallengeSerializer(
        required=False, help_text="passkey-challenge and submit: the scaChallenge initiate answered."
    )
    confirmation = ConfirmationField(
        required=False,
        help_text="submit: `{method: passkey, passkeySession, assertion}`, `{method: totp, code}` or "
        "`{method: pin, pin}` (pin only where the program offers it).",
    )
    idempotencyKey = IdempotencyKeyField(
        required=False,
        help_text="submit: a UUID. A retry with the same key answers the first successful answer "
        "(header `Idempotent-Replayed: true`) before any other check; while the first submit is "
        "still running, 409 IDEMPOTENCY_KEY_IN_PROGRESS, its confirmation not checked (nor counted "
        "as a wrong code).",
    )

    def validate(self, data: dict) -> dict:
        missing = [name for name in self.REQUIRED[data["action"]] if name not in data]
        if data["action"] in self.PAYMENTS_OR_DRAFT and "payments" not in data and "batchId" not in data:
            missing.append("payments")
        if missing:
            raise serializers.ValidationError({name: [f"Required for {data['action']}."] for name in missing})
        return data


class VerifyAnswerSerializer(serializers.Serializer):
    success = serializers.BooleanField(default=True)
    requestId = serializers.CharField(help_text="The draft's id: the batchId to read it and submit it.")
    status = serializers.ChoiceField(choices=["DRAFT"], help_text="The draft's status.")


class ScaChallengeAnswerSerializer(serializers.Serializer):
    id = serializers.CharField()
    expiresAt = serializers.DateTimeField(help_text="Five minutes after initiate.")


class InitiateAnswerSerializer(serializers.Serializer):
    totalAmount = serializers.CharField(help_text="Decimal string: the sum of the valid payments.")
    currency = serializers.CharField(help_text="ISO 4217: the payer accounts' currency.")
    scaChallenge = ScaChallengeAnswerSerializer()


class CountsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    valid = serializers.IntegerField()
    invalid = serializers.IntegerField()


class SubmitAnswerSerializer(serializers.Serializer):
    batchId = serializers.CharField()
    status = serializers.ChoiceField(choices=BATCH_STATUSES)
    counts = CountsSerializer()


class ItemsStatusSerializer(serializers.Serializer):
    completed = serializers.IntegerField(help_text="Items SUCCESS.")
    pending = serializers.IntegerField(help_text="Items QUEUED.")
    processing = serializers.IntegerField(help_text="Items PROCESSING.")
    failed = serializers.IntegerField(help_text="Items FAILED.")


class BatchSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=BATCH_STATUSES)
    customerId = serializers.CharField(allow_null=True, help_text="The payers' customer when they share one.")
    programId = serializers.CharField()
    sandbox = serializers.BooleanField()
    paymentsCount = serializers.IntegerField()
    createdDateTime = serializers.DateTimeField()
    messageId = serializers.CharField(
        required=False, help_text="Only for a batch made from an ISO 20022 file: its GrpHdr/MsgId."
    )
    customerName = serializers.CharField(
        required=False, allow_null=True, help_text="Management callers only."
    )
    custodianName = serializers.CharField(
        required=False, allow_null=True, help_text="Management callers only."
    )
    itemsStatus = ItemsStatusSerializer(required=False, help_text="Only with includeItemSummary=true.")
    totalAmount = serializers.CharField(
        required=False, help_text="Sum of the item amounts; only with includeItemSummary=true."
    )


class DraftSummarySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The batchId to submit the draft with.")
    status = serializers.ChoiceField(choices=DRAFT_STATUSES)
    paymentsCount = serializers.IntegerField()
    expiresAt = serializers.DateTimeField()
    createdDateTime = serializers.DateTimeField()
    payloadStatus = serializers.ChoiceField(
        choices=PAYLOAD_STATUSES, help_text="PENDING while its payments are being verified."
    )


class BatchListSerializer(serializers.Serializer):
    paymentsBatches = PolymorphicProxySerializer(
        component_name="BatchListEntry",
        serializers=[BatchSummarySerializer, DraftSummarySerializer],
        resource_type_field_name=None,
        many=True,
        help_text="Batches, or with drafts=true the caller's drafts (DraftSummary entries).",
    )
    nextToken = serializers.CharField(allow_null=True)


class PayerShownSerializer(serializers.Serializer):
    name = serializers.CharField(allow_null=True)
    accountNumber = serializers.CharField(allow_null=True)


class PayeeShownSerializer(serializers.Serializer):
    name = serializers.CharField()
    accountNumber = serializers.CharField(allow_null=True)
    sortCode = serializers.CharField(allow_null=True)
    iban = serializers.CharField(allow_null=True)
    bic = serializers.CharField(allow_null=True)


class BatchItemSerializer(serializers.Serializer):
    id = serializers.CharField()
    batchId = serializers.CharField()
    customerId = serializers.CharField(allow_null=True)
    accountId = serializers.CharField(
        allow_null=True, help_text="The payer account (null if none was found)."
    )
    payer = PayerShownSerializer()
    payee = PayeeShownSerializer()
    amount = serializers.CharField(allow_null=True, help_text="Null when the amount sent was not an amount.")
    currency = serializers.CharField(allow_null=True)
    reference = serializers.CharField()
    bankName = serializers.CharField(allow_null=True)
    scheduledDate = serializers.CharField(
        help_text="YYYY/MM/DD. From an ISO 20022 file: its payment instruction's ReqdExctnDt."
    )
    endToEndId = serializers.CharField(
        help_text="From an ISO 20022 file: the transaction's PmtId/EndToEndId; otherwise the item id's "
        "32 hex digits. The status report names the item by it."
    )
    status = serializers.ChoiceField(choices=ITEM_STATUSES)
    error = serializers.CharField(required=False, help_text="Only on FAILED items: why.")
    createdDateTime = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    programId = serializers.CharField()
    sandbox = serializers.BooleanField()


class DraftPaymentSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position in the payments sent, from 0.")
    payment = BatchPaymentSerializer()


class InvalidDraftPaymentSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position in the payments sent, from 0.")
    # Whatever was sent in that position: it failed the rules, so it may have any shape.
    payment = serializers.JSONField(help_text="The payment as sent.")
    reasons = serializers.ListField(child=serializers.CharField())


class DraftDetailSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=DRAFT_STATUSES)
    paymentsCount = serializers.IntegerField()
    expiresAt = serializers.DateTimeField()
    createdDateTime = serializers.DateTimeField()
    payloadStatus = serializers.ChoiceField(choices=PAYLOAD_STATUSES)
    validPayments = DraftPaymentSerializer(
        many=True, required=False, help_text="Once verified, until expiry."
    )
    invalidPayments = InvalidDraftPaymentSerializer(
        many=True, required=False, help_text="Once verified, until expiry."
    )


class BatchDetailSerializer(serializers.Serializer):
    batchId = serializers.CharField()
    status = serializers.ChoiceField(
        choices=BATCH_STATUSES, required=False, help_text="The batch's status (absent for a draft)."
    )
    paymentsBatchItems = BatchItemSerializer(many=True, required=False, help_text="Absent for a draft.")
    draft = DraftDetailSerializer(required=False, help_text="Only when the id names a draft.")
