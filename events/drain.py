"""Sending an endpoint's deliveries: one drain per endpoint at a time.

A drain holds the endpoint (`WebhookEndpoint.drain_leased_until`, a conditional
UPDATE, renewed while it works), then takes the endpoint's due deliveries in sets,
in event order, and hands them to its lanes: a few threads (`DRAIN_LANES`), each
sending over connections it keeps open for the whole drain, so one busy endpoint
gets several posts at once and at most that many connections. The order rule, per
resource: an undelivered earlier event holds back later events of the same
resource to that endpoint (a later one never overtakes), while other resources go
on. So a set leaves out a delivery with an earlier one of its resource waiting for
a retry, or an earlier event of its resource not fanned out yet; one resource's
deliveries go on one lane, one after another, and a failed attempt holds back the
rest of its resource for the rest of the drain. Different resources go side by side.

The drain's own thread does all the database work while the lanes send: it reads
the next set before they run short, and records finished outcomes in batches, a
handful of statements each (the attempts, the delivered, the failed, the
endpoint's health). A resource is in flight from its handing over until its
outcomes are recorded, and no read takes a later delivery of it meanwhile. At
least once: a drain killed mid-way leaves what it had not recorded pending and the
endpoint held until the lease runs out; the next drain sends them again, under
the same `webhook-id`.
"""

import json
import logging
import random
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from bankapi.errors import ApiError
from bankapi.ops import outbound
from bankapi.ops.logs import log_context_of_request
from bankapi.ops.metrics import WEBHOOK_DELIVERIES
from events import signing
from events.due import due_deliveries
from events.lanes import AttemptOutcome, Lanes
from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from events.payloads import event_payload

ATTEMPT_TIMEOUT_SECONDS = 10.0
# Deliveries taken per set: their outcomes are written together.
DRAIN_SET_SIZE = 200
# Sends in flight at once within one endpoint's drain, each lane over a kept
# connection of its own: different resources' deliveries go side by side, one
# resource's always one after another.
DRAIN_LANES = 4
# How often, at least, the drain's thread looks at its lease while its lanes send.
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


def _live_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    secrets_ = [endpoint.secret]
    if (
        endpoint.previous_secret
        and endpoint.previous_secret_expires_at
        and endpoint.previous_secret_expires_at > now
    ):
        secrets_.append(endpoint.previous_secret)
    return secrets_


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
    """Send the endpoint's due deliveries until none is due (or `seconds` have
    passed), unless another drain holds the endpoint.

    The endpoint is given back, then looked at once more: deliveries committed
    while this drain was finishing found it held and started no drain of their
    own, so this one goes on with them (or a drain that took the endpoint in
    between does)."""
    delivered, drained, more = 0, False, False
    held: set[str] = set()  # resources that failed in this drain: not tried again by it
    deadline = time.monotonic() + seconds
    lease = Lease(endpoint_id)
    lanes = Lanes(DRAIN_LANES, _attempt)
    try:
        while lease.take():
            drained = True
            try:
                sent, more = _drain(lease, lanes, held, deadline)
                delivered += sent
            finally:
                lease.give_back()
            if more or not due_deliveries(endpoint_id, timezone.now(), held, 1):
                break
    finally:
        lanes.close()
    return DrainResult(delivered, drained, more)


def _drain(lease: Lease, lanes: Lanes, held: set[str], deadline: float) -> tuple[int, bool]:
    """While the lease holds: read due deliveries in sets and hand them to the
    lanes, and record their outcomes as they come back, both in batches, so the
    lanes never wait for the database. A resource is "in flight" from its
    handing over until its outcomes are recorded: no read takes a later delivery
    of it before then (a failure would have held that one back). Answers how many
    were delivered, and whether the deadline stopped it with more to do."""
    delivered, more = 0, False
    in_flight: set[str] = set()
    finished: list[tuple[Delivery, AttemptOutcome]] = []
    finished_resources: list[str] = []
    error: BaseException | None = None
    endpoint: WebhookEndpoint | None = None
    reading, read_more = True, True
    lanes.resume()
    while True:
        if reading and read_more and lanes.waiting() < max(1, DRAIN_SET_SIZE // 2):
            endpoint = WebhookEndpoint.objects.filter(id=lease.endpoint_id, enabled=True).first()
            if endpoint is None:
                reading = False
            else:
                due = due_deliveries(endpoint.id, timezone.now(), held | in_flight, DRAIN_SET_SIZE)
                in_flight.update(lanes.hand(endpoint, due))
                read_more = bool(due)
        if not in_flight:
            if reading and read_more:
                continue
            break
        for resource, sent, failure in lanes.outcomes(LEASE_CHECK_SECONDS):
            finished.extend(sent)
            finished_resources.append(resource)
            error = error or failure
        if finished_resources and (
            len(finished) >= DRAIN_SET_SIZE // 2 or not lanes.waiting() or not reading or error is not None
        ):
            if finished and endpoint is not None:  # (one was read: something was handed over)
                _record(endpoint, finished)
                for delivery, outcome in finished:
                    _log(endpoint, delivery, outcome)
            succeeded = sum(outcome.delivered for _, outcome in finished)
            for label, count in (("delivered", succeeded), ("failed", len(finished) - succeeded)):
                if count:
                    WEBHOOK_DELIVERIES.labels(outcome=label).inc(count)
            held.update(delivery.resource_key for delivery, outcome in finished if not outcome.delivered)
            delivered += succeeded
            in_flight.difference_update(finished_resources)
            finished, finished_resources, read_more = [], [], True
            reading = reading and endpoint is not None and endpoint.enabled
        # Renewed while anything is in flight, also past the deadline: the lanes
        # finish what they were handed before the drain ends.
        if error is not None or (in_flight and not lease.keep()):
            # A send raised, or the lease is lost (too slow to renew: another drain
            # may have the endpoint now): what is in flight finishes, nothing more starts.
            lanes.stop()
            reading = False
        if reading and time.monotonic() >= deadline:
            reading, more = False, True
    if error is not None:
        raise error
    return delivered, more


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
