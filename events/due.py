"""Which of an endpoint's deliveries are due to be sent, in event order, and not
held back by an earlier undelivered event of their resource (`events.drain`
sends them)."""

import uuid
from datetime import datetime

from django.db.models import Q

from events.models import Delivery, Event


def due_deliveries(endpoint_id: uuid.UUID | str, now: datetime, held: set[str], limit: int) -> list[Delivery]:
    """The endpoint's deliveries that may go now, at most `limit`, in event order:
    due, not behind an earlier one of their resource still waiting (for its
    retry, or for its event's fan-out), and not of a resource in `held` (failed
    in this drain).

    Read as plain index scans, whatever the history: a page of due deliveries in
    event order, their events by key, then what could hold them back (their
    resources' deliveries waiting for a retry, and their resources' events not
    fanned out yet) for just those resources. A page whose every delivery is held
    back is followed by the next one."""
    due: list[Delivery] = []
    held = set(held)
    after: tuple[int, int] | None = None
    while not due:
        page = Delivery.objects.filter(
            endpoint_id=uuid.UUID(str(endpoint_id)),
            endpoint__enabled=True,
            state=Delivery.State.PENDING,
            next_attempt_at__lte=now,
        )
        if held:
            page = page.exclude(resource_key__in=held)
        if after is not None:
            page = page.filter(Q(event_id__gt=after[0]) | Q(event_id=after[0], id__gt=after[1]))
        candidates = list(page.order_by("event_id", "id")[:limit])
        if not candidates:
            break
        after = (candidates[-1].event_id, candidates[-1].id)
        due = _not_held_back(endpoint_id, candidates, now, held)
        if len(candidates) < limit:
            break
    return due


def _not_held_back(
    endpoint_id: uuid.UUID | str, candidates: list[Delivery], now: datetime, held: set[str]
) -> list[Delivery]:
    """The candidates (due, in event order) that nothing earlier of their resource
    holds back, each with its event; the resources of the others join `held`."""
    events = Event.objects.in_bulk({delivery.event_id for delivery in candidates})
    keys = {delivery.resource_key for delivery in candidates}
    # The earliest delivery of each resource waiting for its retry...
    first_waiting: dict[str, tuple[int, int]] = {}
    for key, event_id, delivery_id in Delivery.objects.filter(
        endpoint_id=uuid.UUID(str(endpoint_id)),
        resource_key__in=keys,
        state=Delivery.State.PENDING,
        next_attempt_at__gt=now,
    ).values_list("resource_key", "event_id", "id"):
        first_waiting[key] = min(first_waiting.get(key, (event_id, delivery_id)), (event_id, delivery_id))
    # ...and the earliest event of each resource not fanned out yet (a few rows:
    # the relay fans events out oldest first; a partial index holds them).
    resources = {(event.program_id, event.resource_type, event.resource_id) for event in events.values()}
    first_unsent: dict[tuple, int] = {}
    for program_id, resource_type, resource_id, event_id in Event.objects.filter(
        fanned_out=False,
        id__lt=max(events),
        program_id__in={resource[0] for resource in resources},
        resource_type__in={resource[1] for resource in resources},
        resource_id__in={resource[2] for resource in resources},
    ).values_list("program_id", "resource_type", "resource_id", "id"):
        resource = (program_id, resource_type, resource_id)
        first_unsent[resource] = min(first_unsent.get(resource, event_id), event_id)
    due = []
    for delivery in candidates:
        event = delivery.event = events[delivery.event_id]
        waiting = first_waiting.get(delivery.resource_key)
        unsent = first_unsent.get((event.program_id, event.resource_type, event.resource_id))
        if (
            delivery.resource_key in held
            or (waiting is not None and waiting < (delivery.event_id, delivery.id))
            or (unsent is not None and unsent < delivery.event_id)
        ):
            held.add(delivery.resource_key)  # and every later one of it
            continue
        due.append(delivery)
    return due
