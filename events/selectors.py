"""Reads of events and webhook endpoints, always inside the caller's scope."""

from datetime import datetime

from django.db.models import Min, QuerySet
from django.utils import timezone

from bankapi.errors import not_found
from bankapi.scope import Scope, get_or_not_found, parse_uuid
from bankapi.tenancy import EVENTS, role_filter
from events.models import Delivery, Event, WebhookEndpoint


def events_of(
    scope: Scope, *, type: str | None = None, created_after: datetime | None = None
) -> QuerySet[Event]:
    """A customer sees its own events, a custodian those of its batches, a
    management caller every event of the named program in its environment."""
    events = role_filter(EVENTS, Event.objects.all(), scope)
    if type:
        events = events.filter(type=type)
    if created_after:
        events = events.filter(created_at__gt=created_after)
    return events


def event_of(scope: Scope, event_id: str) -> Event:
    parsed = parse_uuid(event_id)
    event = events_of(scope).filter(event_id=parsed).first() if parsed else None
    if event is None:
        raise not_found("Event")
    return event


def endpoints_of(scope: Scope) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.for_scope(scope)


def endpoint_of(scope: Scope, endpoint_id: str) -> WebhookEndpoint:
    return get_or_not_found(endpoints_of(scope), endpoint_id, "Webhook endpoint")


def outbox_oldest_pending_seconds() -> float:
    """How long the oldest event still waiting to go out has waited: one not yet
    fanned out to its endpoints, or a delivery not yet made to an enabled endpoint
    (a disabled endpoint's deliveries wait for an operator, not for us). 0 when
    nothing waits. Across every program: an operator's figure, not a caller's."""
    now = timezone.now()
    unfanned = Event.objects.filter(fanned_out=False).order_by("id").values_list("written_at", flat=True)[:1]
    undelivered = Delivery.objects.filter(state=Delivery.State.PENDING, endpoint__enabled=True).aggregate(
        oldest=Min("created_at")
    )["oldest"]
    waiting = [moment for moment in (*unfanned, undelivered) if moment is not None]
    return max((now - min(waiting)).total_seconds(), 0.0) if waiting else 0.0
