"""Request and response bodies of the event and webhook-endpoint routes."""

from rest_framework import serializers

from bankapi.http.schema import HTTP_URL_PATTERN
from bankapi.http.serializers import (
    InputSerializer,
    StrictCharField,
    StrictChoiceField,
    StrictListField,
    WholeMatchValidator,
)
from events.models import EventType


class EventSerializer(serializers.Serializer):
    eventId = serializers.UUIDField()
    type = serializers.ChoiceField(choices=EventType.choices)
    createdAt = serializers.DateTimeField()
    sandbox = serializers.BooleanField()
    data = serializers.DictField(  # type: ignore[assignment]  # drf-stubs: a field named like a Field attribute
        help_text="The resource as its own route shows it, at the time of the event."
    )


class EventListSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True)


class EventRedeliveredSerializer(serializers.Serializer):
    eventId = serializers.UUIDField()
    queued = serializers.IntegerField(
        help_text="Deliveries queued: one per enabled endpoint subscribed to the type."
    )


class WebhookEndpointCreateSerializer(InputSerializer):
    url = StrictCharField(
        max_length=2000,
        help_text="Where events are POSTed, checked now and again before every delivery; redirects "
        "are not followed. Every address the host resolves to must be public: loopback, private "
        "(10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10), shared "
        "(100.64/10), unspecified, multicast and reserved addresses are refused, and so are IPv6 "
        "forms carrying such an IPv4 address (IPv4-mapped, IPv4-compatible, 6to4, NAT64) and IPv4 "
        "hosts not written as four decimal numbers. A deployed service takes https only; a "
        "development run also takes http and loopback receivers (127.0.0.0/8, ::1, localhost). "
        "Refused: 400 VALIDATION_ERROR naming `url`.",
        # The service checks the URL itself; whitespace or a control character
        # anywhere (a trailing newline included) is refused here already.
        validators=[WholeMatchValidator(r"^[^\s\x00-\x1f\x7f]+$", "Must be a URL, without spaces.")],
        openapi={"format": "uri", "pattern": HTTP_URL_PATTERN},
    )
    eventTypes = StrictListField(
        child=StrictChoiceField(choices=EventType.choices), min_length=1, max_length=len(EventType.values)
    )


class WebhookEndpointSerializer(serializers.Serializer):
    endpointId = serializers.UUIDField()
    url = serializers.CharField()
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=EventType.choices))
    enabled = serializers.BooleanField()
    disabledReason = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()


class WebhookEndpointSecretSerializer(serializers.Serializer):
    endpointId = serializers.UUIDField()
    url = serializers.CharField()
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=EventType.choices))
    secret = serializers.CharField(
        help_text="`whsec_` and the base64 of the signing key. Shown only in this answer: store it."
    )
    createdAt = serializers.DateTimeField()


class WebhookEndpointListSerializer(serializers.Serializer):
    webhookEndpoints = WebhookEndpointSerializer(many=True)
    nextToken = serializers.CharField(allow_null=True)
