"""The OpenAPI description of webhook deliveries: one callback per event type, so
an integrator can generate a typed receiver from the document."""

from django.utils.module_loading import import_string
from drf_spectacular.utils import OpenApiCallback, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers

from events.models import EventType

# Each event's `data` is the resource as its own route shows it.
PAYLOADS: dict[EventType, str] = {
    EventType.PAYMENT_REQUEST_ACCEPTED: "payments.serializers.PaymentRequestSerializer",
    EventType.PAYMENT_REQUEST_HELD: "payments.serializers.PaymentRequestSerializer",
    EventType.PAYMENT_REQUEST_APPROVED: "payments.serializers.PaymentRequestSerializer",
    EventType.PAYMENT_REQUEST_SETTLED: "payments.serializers.PaymentRequestSerializer",
    EventType.PAYMENT_REQUEST_FAILED: "payments.serializers.PaymentRequestSerializer",
    EventType.PAYMENT_REQUEST_RETURNED: "payments.serializers.PaymentRequestSerializer",
    EventType.SCHEDULED_PAYMENT_RUN_SUCCEEDED: "payments.serializers.ScheduledPaymentSerializer",
    EventType.SCHEDULED_PAYMENT_RUN_FAILED: "payments.serializers.ScheduledPaymentSerializer",
    EventType.SCHEDULED_PAYMENT_COMPLETED: "payments.serializers.ScheduledPaymentSerializer",
    EventType.BATCH_FUNDED: "batches.serializers.BatchSummarySerializer",
    EventType.BATCH_FUNDING_FAILED: "batches.serializers.BatchSummarySerializer",
    EventType.BATCH_COMPLETED: "batches.serializers.BatchSummarySerializer",
    EventType.BATCH_PARTIALLY_FAILED: "batches.serializers.BatchSummarySerializer",
    EventType.BATCH_FAILED: "batches.serializers.BatchSummarySerializer",
    EventType.APPLICATION_STAGE_CHANGED: "onboarding.serializers.ApplicationDetailSerializer",
    EventType.APPLICATION_VERIFICATION_UPDATED: "onboarding.serializers.ApplicationDetailSerializer",
    EventType.CARD_ISSUED: "cards.serializers.CardSerializer",
    EventType.INCOMING_PAYMENT_RECEIVED: "payments.serializers_incoming.IncomingPaymentSerializer",
    **{
        event_type: "cards.serializers_authorizations.CardAuthorizationSerializer"
        for event_type in (
            EventType.CARD_AUTHORIZATION_CREATED,
            EventType.CARD_AUTHORIZATION_CLEARED,
            EventType.CARD_AUTHORIZATION_REVERSED,
            EventType.CARD_AUTHORIZATION_EXPIRED,
        )
    },
    **{
        event_type: "approvals.serializers.ApprovalSerializer"
        for event_type in (
            EventType.APPROVAL_REQUESTED,
            EventType.APPROVAL_APPROVED,
            EventType.APPROVAL_EXECUTED,
            EventType.APPROVAL_FAILED,
            EventType.APPROVAL_REJECTED,
            EventType.APPROVAL_EXPIRED,
        )
    },
}

HEADERS_TEXT = (
    "Signed as the Standard Webhooks specification says: `webhook-id` (the eventId, the same on "
    "every retry), `webhook-timestamp` (unix seconds), `webhook-signature` (`v1,<base64 "
    'HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed by the secret\'s bytes '
    "after `whsec_`; two signatures, space-separated, while a rotated secret still signs). "
    "Answer any 2xx within 10 s; anything else is retried."
)


def _name(event_type: str) -> str:
    return "".join(part.title() for part in event_type.replace(".", "_").split("_"))


def _event_serializer(event_type: EventType):
    return inline_serializer(
        name=f"{_name(event_type)}Event",
        fields={
            "eventId": serializers.UUIDField(),
            "type": serializers.ChoiceField(choices=[str(event_type)]),
            "createdAt": serializers.DateTimeField(),
            "sandbox": serializers.BooleanField(),
            "data": import_string(PAYLOADS[event_type])(),
        },
    )


def webhook_callbacks() -> list[OpenApiCallback]:
    return [
        OpenApiCallback(
            name=str(event_type),
            path="{$request.body#/url}",
            decorator=extend_schema(
                summary=f"Delivery of {event_type.value}",
                description=HEADERS_TEXT,
                request=_event_serializer(event_type),
                responses={200: OpenApiResponse(description="Any 2xx acknowledges the delivery.")},
            ),
        )
        for event_type in PAYLOADS
    ]
