"""Event and webhook-endpoint routes. Views parse and authorise; services decide."""

from datetime import UTC, datetime

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from bankapi.errors import validation_error
from bankapi.formats import CALENDAR_DAY, ISO_DATE_TIME
from bankapi.http.api import PAGE_PARAMETERS, ScopedAPIView
from bankapi.http.pagination import page_body, paginate
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses, management_program_id
from bankapi.roles import Role
from events.endpoints import endpoint_create, endpoint_delete, endpoint_rotate_secret, event_redeliver
from events.models import EventType, WebhookEndpoint
from events.payloads import event_payload
from events.schema import webhook_callbacks
from events.selectors import endpoint_of, endpoints_of, event_of, events_of
from events.serializers import (
    EventListSerializer,
    EventRedeliveredSerializer,
    WebhookEndpointCreateSerializer,
    WebhookEndpointListSerializer,
    WebhookEndpointSecretSerializer,
)

PROGRAM_ID = management_program_id(
    "The program, for management callers (required for them, else 400); ignored for others.",
    management_only=False,
)
MANAGEMENT_PROGRAM_ID = management_program_id("The program.", management_only=True)
PAGE = PAGE_PARAMETERS
# ISO_DATE_TIME on a calendar day, with its zone required.
CREATED_AFTER_PATTERN = (
    f"^{CALENDAR_DAY}"
    r"[T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.,][0-9]{1,9})?)?"
    r"(Z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)$"
)


def endpoint_data(endpoint: WebhookEndpoint) -> dict:
    return {
        "endpointId": str(endpoint.id),
        "url": endpoint.url,
        "eventTypes": endpoint.event_types,
        "enabled": endpoint.enabled,
        "disabledReason": endpoint.disabled_reason or None,
        "createdAt": endpoint.created_at.isoformat(),
    }


def endpoint_secret_data(endpoint: WebhookEndpoint) -> dict:
    return {
        "endpointId": str(endpoint.id),
        "url": endpoint.url,
        "eventTypes": endpoint.event_types,
        "secret": endpoint.secret,
        "createdAt": endpoint.created_at.isoformat(),
    }


class EventsScopedView(ScopedAPIView):
    """Customers and custodians with their access token; management with its id token."""

    roles = (Role.CUSTOMER, Role.CUSTODIAN, Role.MANAGEMENT)

    def required_token_use(self, claims: dict) -> str:
        return "id" if claims.get("role") == Role.MANAGEMENT else "access"


class ManagementView(ScopedAPIView):
    token_use = "id"
    roles = (Role.MANAGEMENT,)


def _created_after(raw: str | None) -> datetime | None:
    if raw is None:
        return None
    if not ISO_DATE_TIME.fullmatch(raw):
        raise validation_error(
            "createdAfter", "createdAfter must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z."
        )
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise validation_error("createdAfter", "createdAfter is not a real date-time.")
    if moment.tzinfo is None:
        raise validation_error("createdAfter", "createdAfter needs a time zone (Z or an offset).")
    # Compared in UTC: the database takes offsets up to 15:59 only, ISO 8601 up to 23:59.
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # Before 0001-01-01 or after 9999-12-31 once in UTC: every event is later
        # than the one, none later than the other.
        return datetime.min.replace(tzinfo=UTC) if moment.year == 1 else datetime.max.replace(tzinfo=UTC)


def _event_type(raw: str | None) -> str | None:
    if raw is not None and raw not in EventType.values:
        raise validation_error("type", f"type must be one of: {', '.join(EventType.values)}.")
    return raw


class EventListView(EventsScopedView):
    @extend_schema(
        tags=["events"],
        summary="Events of the caller",
        description=(
            "What happened after the requests that started it, newest first: a customer sees its "
            "own events, a custodian those of its batches, a management caller (id token and "
            "`programId`) every event of the program in its environment. Each event carries the "
            "resource as its own route shows it."
        ),
        parameters=[
            PROGRAM_ID,
            OpenApiParameter("type", str, OpenApiParameter.QUERY, required=False, enum=EventType.values),
            OpenApiParameter(
                "createdAfter",
                {"type": "string", "pattern": CREATED_AFTER_PATTERN},
                OpenApiParameter.QUERY,
                required=False,
                description="ISO 8601 date-time with a zone; only later events.",
            ),
            *PAGE,
        ],
        responses={
            200: envelope("EventListResponse", EventListSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request):
        events = events_of(
            self.scope,
            type=_event_type(request.query_params.get("type")),
            created_after=_created_after(request.query_params.get("createdAfter")),
        )
        return ok(page_body(paginate(events, request), "events", event_payload))


class EventRedeliverView(EventsScopedView):
    @extend_schema(
        tags=["events"],
        summary="Deliver an event again",
        description=(
            "Queues one more delivery of the event to every enabled webhook endpoint subscribed to "
            "its type. The delivery carries the same `webhook-id` as the first one."
        ),
        request=None,
        parameters=[PROGRAM_ID],
        responses={
            200: envelope("EventRedeliveredResponse", EventRedeliveredSerializer()),
            **error_responses(400, 401, 403, 404, s404="RESOURCE_NOT_FOUND: no such event for this caller."),
        },
    )
    def post(self, request, eventId: str):
        event = event_of(self.scope, eventId)
        return ok({"eventId": str(event.event_id), "queued": event_redeliver(event)})


class WebhookEndpointListView(ManagementView):
    @extend_schema(
        tags=["webhooks"],
        summary="Webhook endpoints of the program",
        description="Management id token and `programId`. Secrets are never listed.",
        parameters=[MANAGEMENT_PROGRAM_ID, *PAGE],
        responses={
            200: envelope("WebhookEndpointListResponse", WebhookEndpointListSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
    def get(self, request):
        page = paginate(endpoints_of(self.scope), request)
        return ok(page_body(page, "webhookEndpoints", endpoint_data))

    @extend_schema(
        tags=["webhooks"],
        summary="Subscribe a webhook endpoint",
        description=(
            "Events of the listed types, of this program and environment, are POSTed to `url` and "
            "signed as the Standard Webhooks specification says: headers `webhook-id` (the eventId), "
            "`webhook-timestamp` (unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "
            '"<webhook-id>.<webhook-timestamp>.<body>">`, keyed by the secret\'s bytes after `whsec_`). '
            "A delivery answered with anything but 2xx within 10 s is retried with exponential backoff "
            "for 72 hours; an endpoint failing for 72 hours is disabled. The secret is answered only here. "
            "Where `url` may point is checked here and again before every delivery, on the addresses its "
            "host resolves to then; the request goes to an address that passed, never to a second look-up. "
            "A delivery refused by that check is not sent and counts as a failed attempt."
        ),
        parameters=[MANAGEMENT_PROGRAM_ID],
        request=WebhookEndpointCreateSerializer,
        callbacks=webhook_callbacks(),
        responses={
            200: envelope("WebhookEndpointCreatedResponse", WebhookEndpointSecretSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
    def post(self, request):
        body = WebhookEndpointCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        endpoint = endpoint_create(
            program_id=self.scope.program_id,
            sandbox=self.scope.sandbox,
            url=body.validated_data["url"],
            event_types=body.validated_data["eventTypes"],
        )
        return ok(endpoint_secret_data(endpoint))


class WebhookEndpointView(ManagementView):
    @extend_schema(
        tags=["webhooks"],
        summary="Remove a webhook endpoint",
        description="Stops every delivery to it, pending ones included.",
        parameters=[MANAGEMENT_PROGRAM_ID],
        responses={
            200: envelope(
                "WebhookEndpointDeletedResponse",
                serializers.JSONField(allow_null=True, default=None, help_text="Always null."),
            ),
            **error_responses(400, 401, 403, 404),
        },
    )
    def delete(self, request, endpointId: str):
        endpoint_delete(endpoint_of(self.scope, endpointId))
        return Response({"success": True, "data": None})


class WebhookEndpointRotateView(ManagementView):
    @extend_schema(
        tags=["webhooks"],
        summary="Rotate a webhook endpoint's secret",
        description=(
            "Answers a new secret, once. For 24 hours deliveries carry two signatures, by the new "
            "and the old secret, space-separated, so the receiver can switch without a gap."
        ),
        request=None,
        parameters=[MANAGEMENT_PROGRAM_ID],
        responses={
            200: envelope("WebhookEndpointRotatedResponse", WebhookEndpointSecretSerializer()),
            **error_responses(400, 401, 403, 404),
        },
    )
    def post(self, request, endpointId: str):
        endpoint = endpoint_rotate_secret(endpoint_of(self.scope, endpointId))
        return ok(endpoint_secret_data(endpoint))
