"""Webhook endpoints: create, enable, delete, rotate their secret, redeliver to them."""

import uuid
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from bankapi.ops import outbound
from events import signing
from events.models import Delivery, Event, WebhookEndpoint
from events.tasks import drains_enqueue

ROTATION_OVERLAP = timedelta(hours=24)


def _endpoints_for(event: Event) -> list[WebhookEndpoint]:
    return [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(program_id=event.program_id, sandbox=event.sandbox)
        if endpoint.subscribes_to(event.type)
    ]


def endpoint_create(
    *, program_id: uuid.UUID, sandbox: bool, url: str, event_types: list[str]
) -> WebhookEndpoint:
    """A new endpoint with a new signing secret (the caller shows it once).

    Its URL is checked here and again before every delivery (`outbound.url_check`).
    """
    outbound.url_check(url)
    return WebhookEndpoint.objects.create(
        program_id=program_id,
        sandbox=sandbox,
        url=url,
        event_types=sorted(set(event_types)),
        secret=signing.secret_generate(),
    )


def endpoint_enable(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Back in service after an outage: its pending deliveries go out again."""
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(id=endpoint.id)
        locked.enabled, locked.disabled_reason, locked.failing_since = True, "", None
        locked.save(update_fields=["enabled", "disabled_reason", "failing_since", "updated_at"])
        transaction.on_commit(lambda: drains_enqueue([locked.id]))
        return locked


def endpoint_delete(endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


def endpoint_rotate_secret(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """A new secret, answered once; the old one keeps signing beside it for 24 hours."""
    with transaction.atomic():
        locked = WebhookEndpoint.objects.select_for_update().get(id=endpoint.id)
        locked.previous_secret = locked.secret
        locked.previous_secret_expires_at = timezone.now() + ROTATION_OVERLAP
        locked.secret = signing.secret_generate()
        locked.save(update_fields=["previous_secret", "previous_secret_expires_at", "secret", "updated_at"])
        return locked


def event_redeliver(event: Event) -> int:
    """Queue one more delivery of the event to each endpoint subscribed to it now."""
    with transaction.atomic():
        now = timezone.now()
        deliveries = Delivery.objects.bulk_create(
            [
                Delivery(
                    event=event,
                    endpoint=endpoint,
                    resource_key=event.resource_key,
                    redelivery=True,
                    next_attempt_at=now,
                )
                for endpoint in _endpoints_for(event)
                if endpoint.enabled
            ]
        )
        endpoints = {delivery.endpoint_id for delivery in deliveries}
        transaction.on_commit(lambda: drains_enqueue(endpoints))
        return len(deliveries)
