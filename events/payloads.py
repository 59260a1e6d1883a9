"""An event as the events list shows it and webhook deliveries send it."""

from typing import Any

from events.models import Event


def event_payload(event: Event) -> dict[str, Any]:
    """The event as the events list and webhook deliveries show it."""
    return {
        "eventId": str(event.event_id),
        "type": event.type,
        "createdAt": event.created_at.isoformat(),
        "sandbox": event.sandbox,
        "data": event.data,
    }
