"""Sending an endpoint's deliveries: one drain per endpoint at a time.

A drain holds the endpoint (`WebhookEndpoint.drain_leased_until`, a conditional
UPDATE, renewed while it works), then takes the endpoint's due deliveries in sets,
in event order, and sends them over connections it keeps open for the whole drain.
The order rule, per resource: an undelivered earlier event holds back later events
of the same resource to that endpoint (a later one never overtakes), while other
resources go on. So a set leaves out a delivery with an earlier one of its
resource waiting for a retry, or an earlier event of its resource not fanned out
yet; and within the drain a failed attempt holds back the rest of its resource.

Each set's outcomes are written in a handful of statements (the attempts, the
delivered, the failed, the endpoint's health). At least once: a drain killed
mid-set leaves its deliveries pending and the endpoint held until the lease runs
out; the next drain sends them again, under the same `webhook-id`.
"""

import contextvars
import json
import logging
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from bankapi import outbound
from bankapi.errors import ApiError
from bankapi.logs import log_context_of_request
from bankapi.metrics import WEBHOOK_DELIVERIES
from events import signing
from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from events.recording import event_payload

ATTEMPT_TIMEOUT_SECONDS = 10.0
# Deliveries taken per set: their outcomes are written together.
DRAIN_SET_SIZE = 200
# Sends in flight at once within one endpoint's drain, each lane over a kept
# connection of its own: different resources' deliveries go side by side, one
# resource's always one after another.
DRAIN_LANES = 4
# How often the drain's thread looks at its lease while its lanes send.
LEASE_CHECK_SECONDS = 1.0
# A drain with more to send after this long hands the endpoint to a fresh task, so
# a busy endpoint does not keep a worker slot from the others.
DRAIN_SECONDS = 30.0

logger = logging.getLogger(__name__)


def retry_delay(attempts: int) -> timedelta:
    """Exponential backoff with jitter: base, 2x base, 4x base... capped at an hour."""
    base = float(settings.WEBHOOK_RETRY_BASE_SECONDS)
    seconds = min(base * 2 ** max(attempts - 1, 0), 3600.0)
    return timedelta(seconds=seconds * random.uniform(0.75, 1.25))  # noqa: S311 - jitter, not a secret


def _lease_length() -> timedelta:
    return timedelta(seconds=settings.WEBHOOK_DELIVERY_LEASE_SECONDS)


class Lease:
    """This drain's hold on the endpoint: taken only when free or run out, renewed
    before it could run out during a send, given back at the end. Each step is a
    conditional UPDATE on the value this drain wrote, so of two drains at once
    only one holds it, and one that lost it (too slow to renew) learns so."""

    def __init__(self, endpoint_id: uuid.UUID | str) -> None:
        self.endpoint_id = endpoint_id
        self.until: datetime | None = None

    def take(self) -> bool:
        now = timezone.now()
        until = now + _lease_length()
        taken = (
            WebhookEndpoint.objects.filter(id=self.endpoint_id)
            .filter(Q(drain_leased_until__isnull=True) | Q(drain_leased_until__lte=now))
            .update(drain_leased_until=until)
        )
        self.until = until if taken else None
        return bool(taken)

    def keep(self) -> bool:
        """Renew it if less than one attempt's time is left; False if it was lost."""
        now = timezone.now()
        if self.until is None:
            return False
        if self.until - now > timedelta(seconds=ATTEMPT_TIMEOUT_SECONDS + 5):
            return True
        until = now + _lease_length()
        kept = WebhookEndpoint.objects.filter(id=self.endpoint_id, drain_leased_until=self.until).update(
            drain_leased_until=until
        )
        self.until = until if kept else None
        return bool(kept)

    def give_back(self) -> None:
        if self.until is not None:
            WebhookEndpoint.objects.filter(id=self.endpoint_id, drain_leased_until=self.until).update(
                drain_leased_until=None
            )
            self.until = None


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


def _live_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    secrets_ = [endpoint.secret]
    if (
        endpoint.previous_secret
        and endpoint.previous_secret_expires_at
        and endpoint.previous_secret_expires_at > now
    ):
        secrets_.append(endpoint.previous_secret)
    return secrets_


@dataclass(frozen=True)
class AttemptOutcome:
    delivered: bool
    status_code: int | None
    error: str
    latency_ms: int = 0


def _post(endpoint: WebhookEndpoint, event: Event, connections: outbound.Connections) -> AttemptOutcome:
    now = timezone.now()
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
        status = outbound.post(
            target, body=body, headers=headers, timeout=ATTEMPT_TIMEOUT_SECONDS, connections=connections
        )
    except ApiError as error:
        return AttemptOutcome(False, None, f"Refused: {error.message}"[:300])
    except outbound.SendFailed as error:
        return AttemptOutcome(False, None, str(error)[:300])
    if 200 <= status < 300:
        return AttemptOutcome(True, status, "")
    return AttemptOutcome(False, status, f"HTTP {status}")


def _attempt(
    endpoint: WebhookEndpoint, delivery: Delivery, connections: outbound.Connections
) -> AttemptOutcome:
    """One POST of a delivery of the set, timed; recorded with its set."""
    started = time.monotonic()
    try:
        outcome = _post(endpoint, delivery.event, connections)
    except Exception as error:
        # Logged here, under the event's request id; the caller logs the traceback.
        # The delivery stays pending: the next drain sends it again.
        logger.warning(
            "%s to endpoint %s stopped by an error: %s", _about(delivery), endpoint.id, type(error).__name__
        )
        raise
    latency_ms = int((time.monotonic() - started) * 1000)
    return AttemptOutcome(outcome.delivered, outcome.status_code, outcome.error, latency_ms)


def _about(delivery: Delivery) -> str:
    event = delivery.event
    return f"webhook delivery {delivery.id} of event {event.event_id} ({event.type} of {event.resource_key})"


def _record(endpoint: WebhookEndpoint, sent: list[tuple[Delivery, AttemptOutcome]]) -> None:
    """A set's outcomes in one transaction: its attempts, its delivered, its failed
    (each with its own backoff, or given up after the retry window), and the
    endpoint's health."""
    now = timezone.now()
    window = timedelta(hours=settings.WEBHOOK_RETRY_WINDOW_HOURS)
    failed = []
    for delivery, outcome in sent:
        delivery.attempts += 1
        delivery.first_attempt_at = delivery.first_attempt_at or now
        delivery.last_error = outcome.error
        if outcome.delivered:
            delivery.state, delivery.delivered_at = Delivery.State.DELIVERED, now
        elif now - delivery.first_attempt_at >= window:
            delivery.state = Delivery.State.FAILED
            failed.append(delivery)
        else:
            delivery.next_attempt_at = now + retry_delay(delivery.attempts)
            failed.append(delivery)
    delivered_ids = [delivery.id for delivery, outcome in sent if outcome.delivered]
    with transaction.atomic():
        DeliveryAttempt.objects.bulk_create(
            DeliveryAttempt(
                delivery=delivery,
                status_code=outcome.status_code,
                latency_ms=outcome.latency_ms,
                error=outcome.error,
            )
            for delivery, outcome in sent
        )
        if delivered_ids:
            Delivery.objects.filter(id__in=delivered_ids).update(
                state=Delivery.State.DELIVERED,
                delivered_at=now,
                attempts=F("attempts") + 1,
                first_attempt_at=Coalesce("first_attempt_at", Value(now)),
                last_error="",
            )
        if failed:
            Delivery.objects.bulk_update(
                failed, ["state", "next_attempt_at", "attempts", "first_attempt_at", "last_error"]
            )
        if failed or endpoint.failing_since is not None:
            endpoint_health_update(endpoint, [outcome for _, outcome in sent], now)


def endpoint_health_update(endpoint: WebhookEndpoint, outcomes: list[AttemptOutcome], now: datetime) -> None:
    """A success clears the endpoint's run of failures; a failure starts one; an
    endpoint failing without a success for the whole retry window is disabled."""
    locked = WebhookEndpoint.objects.select_for_update().get(id=endpoint.id)
    last_error = ""
    for outcome in outcomes:
        if outcome.delivered:
            locked.failing_since = None
        else:
            locked.failing_since, last_error = locked.failing_since or now, outcome.error
    window = timedelta(hours=settings.WEBHOOK_RETRY_WINDOW_HOURS)
    if locked.failing_since is not None and now - locked.failing_since >= window:
        locked.enabled = False
        locked.disabled_reason = f"Failing since {locked.failing_since.isoformat()}: {last_error}"[:300]
    locked.save(update_fields=["failing_since", "enabled", "disabled_reason", "updated_at"])
    endpoint.enabled, endpoint.failing_since = locked.enabled, locked.failing_since


def _log(endpoint: WebhookEndpoint, delivery: Delivery, outcome: AttemptOutcome) -> None:
    """One line per attempt, under the id of the request that wrote its event."""
    WEBHOOK_DELIVERIES.labels(outcome="delivered" if outcome.delivered else "failed").inc()
    with log_context_of_request(delivery.event.request_id):
        if outcome.delivered:
            logger.info(
                "%s to endpoint %s: delivered (HTTP %s), attempt %d",
                _about(delivery),
                endpoint.id,
                outcome.status_code,
                delivery.attempts,
            )
        elif delivery.state == Delivery.State.PENDING:
            logger.warning(
                "%s to endpoint %s: failed (%s), attempt %d, retry at %s",
                _about(delivery),
                endpoint.id,
                outcome.error,
                delivery.attempts,
                delivery.next_attempt_at.isoformat(),
            )
        else:
            logger.warning(
                "%s to endpoint %s: failed (%s), attempt %d, given up after the retry window",
                _about(delivery),
                endpoint.id,
                outcome.error,
                delivery.attempts,
            )


@dataclass(frozen=True)
class DrainResult:
    delivered: int
    # False: another drain held the endpoint all along (it sends what is due).
    drained: bool = True
    # More was due when the drain stopped at its time limit: a fresh drain goes on.
    more: bool = False


def endpoint_drain(endpoint_id: uuid.UUID | str, *, seconds: float = DRAIN_SECONDS) -> DrainResult:
    """Send the endpoint's due deliveries, set by set, until none is due (or
    `seconds` have passed), unless another drain holds the endpoint.

    The endpoint is given back, then looked at once more: deliveries committed
    while this drain was finishing found it held and started no drain of their
    own, so this one goes on with them (or a drain that took the endpoint in
    between does)."""
    delivered, drained, more = 0, False, False
    held: set[str] = set()  # resources that failed in this drain: not tried again by it
    deadline = time.monotonic() + seconds
    lease = Lease(endpoint_id)
    lanes = Lanes(DRAIN_LANES)
    try:
        while lease.take():
            drained = True
            try:
                sent, more = _drain_sets(lease, lanes, held, deadline)
                delivered += sent
            finally:
                lease.give_back()
            if more or not due_deliveries(endpoint_id, timezone.now(), held, 1):
                break
    finally:
        lanes.close()
    return DrainResult(delivered, drained, more)


def _drain_sets(lease: Lease, lanes: "Lanes", held: set[str], deadline: float) -> tuple[int, bool]:
    """Sets of due deliveries while the lease holds; answers how many were
    delivered, and whether the deadline stopped it with more due."""
    delivered = 0
    while True:
        endpoint = WebhookEndpoint.objects.filter(id=lease.endpoint_id, enabled=True).first()
        if endpoint is None:
            return delivered, False
        due = due_deliveries(endpoint.id, timezone.now(), held, DRAIN_SET_SIZE)
        if not due:
            return delivered, False
        sent, error = lanes.send(endpoint, [d for d in due if d.resource_key not in held], lease)
        # What was sent is recorded even when a send raised.
        if sent:
            _record(endpoint, sent)
            for delivery, outcome in sent:
                _log(endpoint, delivery, outcome)
        if error is not None:
            raise error
        held.update(delivery.resource_key for delivery, outcome in sent if not outcome.delivered)
        delivered += sum(outcome.delivered for _, outcome in sent)
        if lease.until is None or not endpoint.enabled:
            return delivered, False
        if time.monotonic() >= deadline:
            return delivered, True


class Lanes:
    """A drain's senders: up to `count` at once, each over connections of its own
    kept for the whole drain (so a busy endpoint sees at most `count` connections).

    A set is split by resource: one resource's deliveries go one after another on
    one lane, in event order, and a failed attempt leaves the rest of them unsent
    (held back, as the order rule says); different resources go side by side, each
    lane taking the next resource when it is done with one. Lanes only send: the
    drain's own thread reads the sets, keeps the lease (a lane starts no send once
    it is lost) and records the outcomes."""

    def __init__(self, count: int) -> None:
        self.connections = [outbound.Connections() for _ in range(max(1, count))]
        self.pool = ThreadPoolExecutor(len(self.connections), "webhook-lane") if count > 1 else None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        for connections in self.connections:
            connections.close()

    def send(
        self, endpoint: WebhookEndpoint, due: list[Delivery], lease: Lease
    ) -> tuple[list[tuple[Delivery, AttemptOutcome]], BaseException | None]:
        """Send the set; answers what was sent with its outcome, and the error that
        stopped a send, if one did (what was sent before it is answered too)."""
        resources: dict[str, list[Delivery]] = {}
        for delivery in due:
            resources.setdefault(delivery.resource_key, []).append(delivery)
        waiting = deque(resources.values())  # in the order of each resource's first event
        sent: list[tuple[Delivery, AttemptOutcome]] = []
        stop = threading.Event()  # the lease lost, or a send raised: no lane starts another

        def lane(connections: outbound.Connections, may_send: Callable[[], bool]) -> None:
            while True:
                try:
                    deliveries = waiting.popleft()
                except IndexError:
                    return
                for delivery in deliveries:
                    if not may_send():
                        return
                    with log_context_of_request(delivery.event.request_id):
                        outcome = _attempt(endpoint, delivery, connections)
                    sent.append((delivery, outcome))
                    if not outcome.delivered:
                        break  # the rest of its resource waits for this one's retry

        if self.pool is None or len(resources) < 2:
            # One lane: this thread, renewing the lease before each send.
            try:
                lane(self.connections[0], lease.keep)
            except Exception as error:  # noqa: BLE001 - answered to the caller, raised after recording
                return sent, error
            return sent, None

        def parallel_lane(connections: outbound.Connections) -> None:
            try:
                lane(connections, lambda: not stop.is_set())
            except BaseException:
                stop.set()
                raise

        futures = [
            # Each lane runs in a copy of this thread's context: its log lines
            # and spans belong to this drain.
            self.pool.submit(contextvars.copy_context().run, parallel_lane, connections)
            for connections in self.connections[: len(resources)]
        ]
        pending = set(futures)
        while pending:
            if not lease.keep():
                stop.set()  # too slow to renew: another drain may have the endpoint now
            _, pending = wait(pending, timeout=LEASE_CHECK_SECONDS)
        errors = [future.exception() for future in futures if future.exception() is not None]
        return sent, errors[0] if errors else None


def retry_schedule(endpoint_id: uuid.UUID | str) -> tuple[datetime | None, str | None]:
    """The endpoint's next retry, with the request id of its event, when a drain
    should be queued for it: not when a drain is already queued for that time or
    earlier (then None). Marks the endpoint as having one queued then."""
    now = timezone.now()
    head = (
        Delivery.objects.filter(
            endpoint_id=uuid.UUID(str(endpoint_id)),
            endpoint__enabled=True,
            state=Delivery.State.PENDING,
            next_attempt_at__gt=now,
        )
        .order_by("next_attempt_at")
        .values_list("next_attempt_at", "event__request_id")
        .first()
    )
    if head is None:
        return None, None
    retry_at, request_id = head
    queued = (
        WebhookEndpoint.objects.filter(id=endpoint_id)
        .filter(
            Q(drain_scheduled_at__isnull=True)
            | Q(drain_scheduled_at__lte=now)
            | Q(drain_scheduled_at__gt=retry_at)
        )
        .update(drain_scheduled_at=retry_at)
    )
    return (retry_at, request_id) if queued else (None, None)
