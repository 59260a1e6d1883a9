"""Delivery: an event's fan-out to the endpoints subscribed to it, then each
(endpoint, resource) queue sent in order, at least once, with retries, by Celery
tasks (in-process without a broker) and the beat sweep.
"""

import json
import logging
import random
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from bankapi import outbound
from bankapi.errors import ApiError
from bankapi.logs import log_context_of_request
from bankapi.metrics import WEBHOOK_DELIVERIES
from events import signing
from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from events.recording import event_payload

ATTEMPT_TIMEOUT_SECONDS = 10.0
FAN_OUT_GRACE = timedelta(seconds=30)

logger = logging.getLogger(__name__)


def events_fan_out(event_ids: list[int]) -> set[tuple[uuid.UUID, str]]:
    """Create the events' deliveries, once; answer the (endpoint, resource) queues to drain.

    Waits for a fan-out of the same events running elsewhere, then skips them."""
    with transaction.atomic():
        events = list(
            Event.objects.select_for_update().filter(id__in=event_ids, fanned_out=False).order_by("id")
        )
        deliveries_create(events)
    return pending_queues(event_ids)


def outbox_fan_out(limit: int) -> tuple[int, set[tuple[uuid.UUID, str]]]:
    """Fan out the oldest events not fanned out yet, at most `limit`, skipping those
    another relay holds (SKIP LOCKED on PostgreSQL: two relays at once split the
    outbox instead of waiting for each other). Answers how many it fanned out and
    the queues to drain."""
    with transaction.atomic():
        events = list(
            Event.objects.select_for_update(skip_locked=True).filter(fanned_out=False).order_by("id")[:limit]
        )
        made = deliveries_create(events)
    ids = [event.id for event in events]
    return len(ids), pending_queues(ids) if made else set()


def deliveries_create(events: list[Event]) -> int:
    """One delivery per subscribed endpoint for each of the events (locked by the
    caller's transaction), and the events marked fanned out. Answers how many
    deliveries it made."""
    if not events:
        return 0
    endpoints: dict[tuple, list[WebhookEndpoint]] = {}
    for endpoint in WebhookEndpoint.objects.filter(
        program_id__in={event.program_id for event in events},
        sandbox__in={event.sandbox for event in events},
    ):
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
    return len(deliveries)


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


def pending_queues(event_ids: list[int]) -> set[tuple[uuid.UUID, str]]:
    """The (endpoint, resource) queues holding a pending delivery of these events."""
    if not event_ids:
        return set()
    return set(
        Delivery.objects.filter(event_id__in=event_ids, state=Delivery.State.PENDING).values_list(
            "endpoint_id", "resource_key"
        )
    )


def drains_enqueue(queues: Iterable[tuple[Any, str]]) -> None:
    """A drain task per queue; one the broker does not take stays pending for the
    beat sweep (`deliveries_sweep`)."""
    from bankapi.tasks import task_publish
    from events.tasks import deliveries_drain

    for endpoint_id, resource_key in queues:
        task_publish(deliveries_drain, str(endpoint_id), resource_key)


def retry_delay(attempts: int) -> timedelta:
    """Exponential backoff with jitter: base, 2x base, 4x base... capped at an hour."""
    base = float(settings.WEBHOOK_RETRY_BASE_SECONDS)
    seconds = min(base * 2 ** max(attempts - 1, 0), 3600.0)
    return timedelta(seconds=seconds * random.uniform(0.75, 1.25))  # noqa: S311 - jitter, not a secret


def _live_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    secrets_ = [endpoint.secret]
    if (
        endpoint.previous_secret
        and endpoint.previous_secret_expires_at
        and endpoint.previous_secret_expires_at > now
    ):
        secrets_.append(endpoint.previous_secret)
    return secrets_


def _claim_next(endpoint: WebhookEndpoint, resource_key: str, now: datetime) -> Delivery | None:
    """The oldest pending delivery of this resource to this endpoint, if it is due
    and nobody holds it. A later event never overtakes an earlier one."""
    head = (
        Delivery.objects.filter(endpoint=endpoint, resource_key=resource_key, state=Delivery.State.PENDING)
        .select_related("event")
        .order_by("event_id", "id")
        .first()
    )
    if head is None or head.next_attempt_at > now or (head.leased_until and head.leased_until > now):
        return None
    resource_type, _, resource_id = resource_key.partition(":")
    earlier_unsent = Event.objects.filter(
        program_id=head.event.program_id,
        resource_type=resource_type,
        resource_id=resource_id,
        id__lt=head.event_id,
        fanned_out=False,
    ).exists()
    if earlier_unsent:
        return None
    # A conditional update is the claim: of two workers draining the same queue,
    # one moves the lease and the other updates nothing.
    lease = now + timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)
    claimed = Delivery.objects.filter(
        id=head.id, state=Delivery.State.PENDING, leased_until=head.leased_until
    ).update(leased_until=lease)
    if not claimed:
        return None
    head.leased_until = lease
    return head


@dataclass(frozen=True)
class AttemptOutcome:
    delivered: bool
    status_code: int | None
    error: str


def _post(endpoint: WebhookEndpoint, event: Event, now: datetime) -> AttemptOutcome:
    body = json.dumps(event_payload(event), separators=(",", ":")).encode()
    message_id = str(event.event_id)
    timestamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "bankapi-webhooks/1",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signing.signature_header(
            _live_secrets(endpoint, now), message_id, timestamp, body
        ),
    }
    try:
        # Checked again at every send, whoever made the row: a name may resolve
        # elsewhere than when the endpoint was created, and the request goes to
        # the addresses found now, not to a second answer of the name server.
        target = outbound.url_check(endpoint.url)
        status = outbound.post(target, body=body, headers=headers, timeout=ATTEMPT_TIMEOUT_SECONDS)
    except ApiError as error:
        return AttemptOutcome(False, None, f"Refused: {error.message}"[:300])
    except outbound.SendFailed as error:
        return AttemptOutcome(False, None, str(error)[:300])
    if 200 <= status < 300:
        return AttemptOutcome(True, status, "")
    return AttemptOutcome(False, status, f"HTTP {status}")


def _record(endpoint: WebhookEndpoint, delivery: Delivery, outcome: AttemptOutcome, latency_ms: int) -> None:
    now = timezone.now()
    with transaction.atomic():
        DeliveryAttempt.objects.create(
            delivery=delivery, status_code=outcome.status_code, latency_ms=latency_ms, error=outcome.error
        )
        delivery.attempts += 1
        delivery.first_attempt_at = delivery.first_attempt_at or now
        delivery.leased_until = None
        delivery.last_error = outcome.error
        window = timedelta(hours=settings.WEBHOOK_RETRY_WINDOW_HOURS)
        if outcome.delivered:
            delivery.state = Delivery.State.DELIVERED
            delivery.delivered_at = now
        elif now - delivery.first_attempt_at >= window:
            delivery.state = Delivery.State.FAILED
        else:
            delivery.next_attempt_at = now + retry_delay(delivery.attempts)
        delivery.save()
        endpoint_health_update(endpoint, delivered=outcome.delivered, error=outcome.error, now=now)


def endpoint_health_update(endpoint: WebhookEndpoint, *, delivered: bool, error: str, now: datetime) -> None:
    """An endpoint failing without a success for the whole retry window is disabled."""
    locked = WebhookEndpoint.objects.select_for_update().get(id=endpoint.id)
    if delivered:
        locked.failing_since = None
    else:
        locked.failing_since = locked.failing_since or now
        window = timedelta(hours=settings.WEBHOOK_RETRY_WINDOW_HOURS)
        if now - locked.failing_since >= window:
            locked.enabled = False
            locked.disabled_reason = f"Failing since {locked.failing_since.isoformat()}: {error}"[:300]
    locked.save(update_fields=["failing_since", "enabled", "disabled_reason", "updated_at"])
    endpoint.enabled, endpoint.failing_since = locked.enabled, locked.failing_since


@dataclass(frozen=True)
class DrainResult:
    delivered: int
    retry_at: datetime | None
    # The request id of each event it tried to send, in order (None: written
    # outside any request); a retry is for the last one.
    request_ids: tuple[str | None, ...] = ()

    @property
    def request_id(self) -> str | None:
        """The request every event it tried came from; None when they came from
        several requests (or none)."""
        found = set(self.request_ids)
        return found.pop() if len(found) == 1 else None

    @property
    def retry_request_id(self) -> str | None:
        """The request id of the event a retry is for."""
        return self.request_ids[-1] if self.retry_at is not None and self.request_ids else None


def deliveries_drain(endpoint_id: uuid.UUID | str, resource_key: str) -> DrainResult:
    """Send the resource's pending events to the endpoint, oldest first, until one
    fails (it then holds back the later ones until its retry) or none is due.

    Each attempt is logged under the id of the request that wrote its event."""
    delivered = 0
    request_ids: list[str | None] = []
    while True:
        endpoint = WebhookEndpoint.objects.filter(id=endpoint_id, enabled=True).first()
        if endpoint is None:
            return DrainResult(delivered, None, tuple(request_ids))
        now = timezone.now()
        delivery = _claim_next(endpoint, resource_key, now)
        if delivery is None:
            return DrainResult(delivered, None, tuple(request_ids))
        request_ids.append(delivery.event.request_id)
        with log_context_of_request(delivery.event.request_id):
            outcome = _attempt(endpoint, delivery, now)
        if not outcome.delivered:
            retry_at = delivery.next_attempt_at if delivery.state == Delivery.State.PENDING else None
            return DrainResult(delivered, retry_at, tuple(request_ids))
        delivered += 1


def _attempt(endpoint: WebhookEndpoint, delivery: Delivery, now: datetime) -> AttemptOutcome:
    """One POST of a claimed delivery, recorded and logged."""
    event = delivery.event
    about = f"webhook delivery {delivery.id} of event {event.event_id} ({event.type} of {event.resource_key})"
    started = time.monotonic()
    try:
        outcome = _post(endpoint, event, now)
        _record(endpoint, delivery, outcome, int((time.monotonic() - started) * 1000))
    except Exception as error:
        # Logged here, under the event's request id; the caller logs the traceback.
        # The delivery stays pending (leased at worst): the beat sweep sends it again.
        logger.warning("%s to endpoint %s stopped by an error: %s", about, endpoint.id, type(error).__name__)
        raise
    WEBHOOK_DELIVERIES.labels(outcome="delivered" if outcome.delivered else "failed").inc()
    if outcome.delivered:
        logger.info(
            "%s to endpoint %s: delivered (HTTP %s), attempt %d",
            about,
            endpoint.id,
            outcome.status_code,
            delivery.attempts,
        )
    elif delivery.state == Delivery.State.PENDING:
        logger.warning(
            "%s to endpoint %s: failed (%s), attempt %d, retry at %s",
            about,
            endpoint.id,
            outcome.error,
            delivery.attempts,
            delivery.next_attempt_at.isoformat(),
        )
    else:
        logger.warning(
            "%s to endpoint %s: failed (%s), attempt %d, given up after the retry window",
            about,
            endpoint.id,
            outcome.error,
            delivery.attempts,
        )
    return outcome


def deliveries_sweep(limit: int = 500) -> set[tuple[str, str]]:
    """What the beat sweep re-drives: events whose fan-out never ran (a lost task),
    and queues whose head is due (a retry, or a lease left by a crashed worker)."""
    now = timezone.now()
    stale = Event.objects.filter(fanned_out=False, created_at__lt=now - FAN_OUT_GRACE).order_by("id")
    queues: set[tuple[str, str]] = set()
    stale_ids = list(stale.values_list("id", flat=True)[:limit])
    queues.update((str(endpoint), key) for endpoint, key in events_fan_out(stale_ids))
    due = (
        Delivery.objects.filter(
            state=Delivery.State.PENDING, next_attempt_at__lte=now, endpoint__enabled=True
        )
        .exclude(leased_until__gt=now)
        .values_list("endpoint_id", "resource_key")
        .distinct()[:limit]
    )
    queues.update((str(endpoint), key) for endpoint, key in due)
    return queues
