"""Delivery: an event's fan-out to the endpoints subscribed to it, then one drain
per endpoint (`events/drain.py`) sending its deliveries in order, at least once,
with retries, by Celery tasks on the webhooks queue (in-process without a
broker) and the beat sweep.

Set-based: a fan-out takes a chunk of events (`SKIP LOCKED` where two relays may
meet) and writes all their deliveries in one INSERT and one UPDATE; what follows
is one drain task per endpoint that got deliveries, never one per event or per
resource, and none for an endpoint whose drain is running (it finds them).
"""

import logging
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from bankapi.ops.logs import log_context_of_request
from events.models import Delivery, Event, WebhookEndpoint

FAN_OUT_GRACE = timedelta(seconds=30)
# What a fan-out reads of an event: not its data (the drain reads that).
_FAN_OUT_FIELDS = (
    "id",
    "event_id",
    "type",
    "program_id",
    "sandbox",
    "resource_type",
    "resource_id",
    "request_id",
)

logger = logging.getLogger(__name__)


def events_fan_out(event_ids: list[int]) -> set[uuid.UUID]:
    """Create the events' deliveries, once; answer the endpoints to drain.

    Waits for a fan-out of the same events running elsewhere, then skips them."""
    with transaction.atomic():
        events = list(
            Event.objects.select_for_update()
            .filter(id__in=event_ids, fanned_out=False)
            .only(*_FAN_OUT_FIELDS)
            .order_by("id")
        )
        deliveries_create(events)
    return endpoints_to_drain(
        Delivery.objects.filter(event_id__in=event_ids, state=Delivery.State.PENDING)
        .values_list("endpoint_id", flat=True)
        .distinct()
    )


def outbox_fan_out(limit: int, *, created_before: Any = None) -> tuple[int, set[uuid.UUID]]:
    """Fan out the oldest events not fanned out yet (written before `created_before`
    when given, in real time: an event of a test clock's customer is no older for
    its clock), at most `limit`, skipping those another relay holds (SKIP LOCKED on
    PostgreSQL: two relays at once split the outbox instead of waiting for each
    other). Answers how many it fanned out and the endpoints to drain."""
    outbox = Event.objects.filter(fanned_out=False)
    if created_before is not None:
        outbox = outbox.filter(written_at__lt=created_before)
    with transaction.atomic():
        events = list(
            outbox.select_for_update(skip_locked=True).only(*_FAN_OUT_FIELDS).order_by("id")[:limit]
        )
        endpoints = deliveries_create(events)
    return len(events), endpoints_to_drain(endpoints)


def deliveries_create(events: list[Event]) -> set[uuid.UUID]:
    """One delivery per subscribed endpoint for each of the events (locked by the
    caller's transaction), and the events marked fanned out: one INSERT and one
    UPDATE for them all. Answers the endpoints that got deliveries."""
    if not events:
        return set()
    endpoints: dict[tuple, list[WebhookEndpoint]] = {}
    for endpoint in WebhookEndpoint.objects.filter(
        program_id__in={event.program_id for event in events},
        sandbox__in={event.sandbox for event in events},
    ).only("id", "program_id", "sandbox", "event_types"):
        endpoints.setdefault((endpoint.program_id, endpoint.sandbox), []).append(endpoint)
    now = timezone.now()
    deliveries = [
        Delivery(event=event, endpoint=endpoint, resource_key=event.resource_key, next_attempt_at=now)
        for event in events
        for endpoint in endpoints.get((event.program_id, event.sandbox), [])
        if endpoint.subscribes_to(event.type)
    ]
    Delivery.objects.bulk_create(deliveries, ignore_conflicts=True, batch_size=1000)
    Event.objects.filter(id__in=[event.id for event in events]).update(fanned_out=True, updated_at=now)
    _fan_out_log(deliveries)
    return {delivery.endpoint_id for delivery in deliveries}


def _fan_out_log(deliveries: list[Delivery]) -> None:
    """One line per event that got deliveries, under the id of the request that
    wrote it (the events of one batch may come from many requests)."""
    fanned: dict[int, tuple[Event, list[str]]] = {}
    for delivery in deliveries:
        fanned.setdefault(delivery.event.id, (delivery.event, []))[1].append(str(delivery.endpoint_id))
    for event, endpoints in fanned.values():
        with log_context_of_request(event.request_id):
            logger.info(
                "event %s (%s of %s) fanned out to endpoint(s) %s",
                event.event_id,
                event.type,
                event.resource_key,
                ", ".join(endpoints),
            )


def endpoints_to_drain(endpoint_ids: Iterable[Any]) -> set[uuid.UUID]:
    """Those of the endpoints no drain holds now. A held one needs no task: its
    drain looks for due deliveries again after giving the endpoint back, and
    these were committed before this look."""
    wanted = set(endpoint_ids)
    if not wanted:
        return set()
    return set(
        WebhookEndpoint.objects.filter(id__in=wanted, enabled=True)
        .filter(Q(drain_leased_until__isnull=True) | Q(drain_leased_until__lte=timezone.now()))
        .values_list("id", flat=True)
    )


def deliveries_sweep(limit: int = 500) -> set[uuid.UUID]:
    """What the beat sweep re-drives, as sets: events whose fan-out never ran (a
    lost task), and endpoints with a delivery due (a retry, or one a killed
    worker left) and no drain running. Answers the endpoints to drain."""
    now = timezone.now()
    _, endpoints = outbox_fan_out(limit, created_before=now - FAN_OUT_GRACE)
    due = (
        Delivery.objects.filter(state=Delivery.State.PENDING, next_attempt_at__lte=now)
        .values_list("endpoint_id", flat=True)
        .distinct()
    )
    return endpoints | endpoints_to_drain(due)
