"""A drain's lanes: one busy endpoint's deliveries go out several at a time, over
a few kept connections, while each resource's still go one after another in
event order, a failure holds back the rest of its resource only, and nothing
sent goes unrecorded (at least once, with the same webhook-id on a resend).
Against a real HTTP receiver on a loopback port that answers slowly enough for
the lanes to overlap."""

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from config.celery import app
from events import drain
from events.delivery import events_fan_out
from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from events.relay import relay_once
from events.tasks import deliveries_drain
from payments.services.settlement import payment_settle
from tests.events.test_webhooks import ACCEPTED, SETTLED, pay, subscribe, verified

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_drain_tasks")]


@pytest.fixture
def no_drain_tasks(monkeypatch):
    """As with a broker: the relay's drain tasks are not run in-process (each test
    runs its drains itself)."""
    monkeypatch.setattr(deliveries_drain, "apply_async", lambda args, eta=None: None)
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


@dataclass
class Post:
    webhook_id: str
    type: str
    request_id: str
    status: int
    started: float  # when the receiver read it
    answered: float  # when it had answered
    connection: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class SlowReceiver:
    """Answers each POST after `delay` seconds (a random share of it, so lanes
    finish out of step), with the status `status(payload, attempt)` gives (the
    attempt counted per webhook-id); notes every POST and the most it held at once."""

    def __init__(self, delay: float = 0.03, status: Callable[[dict, int], int] | None = None) -> None:
        self.delay = delay
        self.status = status or (lambda payload, attempt: 200)
        self.posts: list[Post] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.connections = 0
        self.jitter = random.Random(38)  # noqa: S311 - test timing, not a secret
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with receiver.lock:
                    receiver.connections += 1
                    self.number = receiver.connections

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                started = time.monotonic()
                payload = json.loads(body)
                webhook_id = self.headers["webhook-id"]
                with receiver.lock:
                    receiver.in_flight += 1
                    receiver.most_in_flight = max(receiver.most_in_flight, receiver.in_flight)
                    attempt = 1 + sum(post.webhook_id == webhook_id for post in receiver.posts)
                    pause = receiver.delay * receiver.jitter.uniform(0.2, 1.0)
                status = receiver.status(payload, attempt)
                time.sleep(pause)
                with receiver.lock:
                    receiver.in_flight -= 1
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                post = Post(
                    webhook_id,
                    payload["type"],
                    payload["data"]["requestId"],
                    status,
                    started,
                    time.monotonic(),
                    self.number,
                    body,
                    {key.lower(): value for key, value in self.headers.items()},
                )
                with receiver.lock:
                    receiver.posts.append(post)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, request_id: str) -> list[Post]:
        """The resource's POSTs in the order the receiver read them."""
        return sorted((post for post in self.posts if post.request_id == request_id), key=lambda p: p.started)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def slow_receiver():
    made: list[SlowReceiver] = []

    def start(**options) -> SlowReceiver:
        made.append(SlowReceiver(**options))
        return made[-1]

    yield start
    for receiver in made:
        receiver.stop()


def paid_and_settled(account, count: int) -> list[str]:
    """`count` payments, each with its accepted then its settled event; their ids."""
    requests = [pay(account, "1.00") for _ in range(count)]
    for request in requests:
        payment_settle(request)
    return [str(request.id) for request in requests]


def assert_in_order_per_resource(receiver: SlowReceiver, request_ids: list[str]) -> None:
    """Each resource's settled event was sent only once its accepted one had been
    answered 2xx: never beside it, never before it."""
    for request_id in request_ids:
        posts = receiver.of(request_id)
        accepted = [post for post in posts if post.type == ACCEPTED and 200 <= post.status < 300]
        settled = [post for post in posts if post.type == SETTLED]
        assert len(accepted) == 1 and settled, posts
        assert all(post.started >= accepted[0].answered for post in settled), posts


def test_lanes_send_resources_side_by_side_and_each_resource_in_order(account, slow_receiver):
    receiver = slow_receiver(delay=0.04)
    endpoint = subscribe(account, receiver.url)
    request_ids = paid_and_settled(account, 12)
    relay_once()

    result = drain.endpoint_drain(endpoint.id)

    assert result == drain.DrainResult(24, drained=True, more=False)
    assert Counter(post.webhook_id for post in receiver.posts) == Counter(
        str(event_id)
        for event_id in Event.objects.filter(resource_id__in=request_ids).values_list("event_id", flat=True)
    )
    assert set(Counter(post.webhook_id for post in receiver.posts).values()) == {1}
    assert_in_order_per_resource(receiver, request_ids)
    # Several at once, never more than the lanes, over connections kept for the drain.
    assert 1 < receiver.most_in_flight <= drain.DRAIN_LANES
    assert receiver.connections <= drain.DRAIN_LANES
    assert all(verified(endpoint, post) for post in receiver.posts)
    assert Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.DELIVERED).count() == 24
    assert DeliveryAttempt.objects.filter(delivery__endpoint=endpoint, status_code=200).count() == 24
    assert WebhookEndpoint.objects.get(id=endpoint.id).drain_leased_until is None


def test_a_failure_in_a_parallel_set_holds_back_its_resource_only_and_is_resent_with_its_id(
    account, slow_receiver, settings
):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 60.0
    failing: set[str] = set()

    def status(payload: dict, attempt: int) -> int:
        # The first attempt of the failing resources' accepted events is refused.
        refused = payload["type"] == ACCEPTED and payload["data"]["requestId"] in failing and attempt == 1
        return 503 if refused else 200

    receiver = slow_receiver(delay=0.03, status=status)
    endpoint = subscribe(account, receiver.url)
    request_ids = paid_and_settled(account, 10)
    failing.update(request_ids[2:5])
    relay_once()

    assert drain.endpoint_drain(endpoint.id).delivered == 2 * 10 - 2 * len(failing)

    for request_id in request_ids:
        sent = [(post.type, post.status) for post in receiver.of(request_id)]
        if request_id in failing:
            # Its settled event was not sent: it waits behind the accepted one's retry.
            assert sent == [(ACCEPTED, 503)]
        else:
            assert sent == [(ACCEPTED, 200), (SETTLED, 200)]
    waiting = Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.PENDING)
    assert sorted((d.event.resource_id, d.event.type, d.attempts) for d in waiting) == sorted(
        [(request_id, ACCEPTED, 1) for request_id in failing]
        + [(request_id, SETTLED, 0) for request_id in failing]
    )
    assert all(d.next_attempt_at > timezone.now() + timedelta(seconds=30) for d in waiting if d.attempts)
    first_ids = {post.request_id: post.webhook_id for post in receiver.posts if post.status == 503}

    waiting.update(next_attempt_at=timezone.now())
    assert drain.endpoint_drain(endpoint.id).delivered == 2 * len(failing)

    assert_in_order_per_resource(receiver, request_ids)
    resent = {
        post.request_id: post.webhook_id
        for post in receiver.posts
        if post.type == ACCEPTED and post.status == 200
    }
    assert all(resent[request_id] == webhook_id for request_id, webhook_id in first_ids.items())
    delivered = Counter(post.webhook_id for post in receiver.posts if post.status == 200)
    assert len(delivered) == 20 and set(delivered.values()) == {1}
    assert set(Delivery.objects.filter(endpoint=endpoint).values_list("state", flat=True)) == {"DELIVERED"}
    attempts = Counter(
        DeliveryAttempt.objects.filter(delivery__endpoint=endpoint).values_list("status_code", flat=True)
    )
    assert attempts == {200: 20, 503: len(failing)}


def test_a_send_raising_in_a_lane_records_what_was_sent_and_the_next_drain_sends_the_rest(
    account, slow_receiver, monkeypatch
):
    receiver = slow_receiver(delay=0.03)
    endpoint = subscribe(account, receiver.url, types=[ACCEPTED])
    requests = [str(pay(account, "1.00").id) for _ in range(16)]
    relay_once()
    broken = Event.objects.get(resource_id=requests[6]).event_id
    post = drain._post

    def breaking_post(endpoint_, event, connections):
        if event.event_id == broken:
            raise RuntimeError("a bug in the sender")
        return post(endpoint_, event, connections)

    monkeypatch.setattr(drain, "_post", breaking_post)
    with pytest.raises(RuntimeError):
        drain.endpoint_drain(endpoint.id)

    # Every POST the receiver answered is recorded as delivered; the rest wait.
    received = {item.webhook_id for item in receiver.posts}
    delivered = set(
        Delivery.objects.filter(endpoint=endpoint, state=Delivery.State.DELIVERED).values_list(
            "event__event_id", flat=True
        )
    )
    assert {str(event_id) for event_id in delivered} == received
    assert str(broken) not in received
    assert len(received) < len(requests)
    assert not Delivery.objects.filter(state=Delivery.State.PENDING).exclude(attempts=0).exists()
    assert WebhookEndpoint.objects.get(id=endpoint.id).drain_leased_until is None

    monkeypatch.setattr(drain, "_post", post)
    drain.endpoint_drain(endpoint.id)

    sent = Counter(item.webhook_id for item in receiver.posts)
    assert len(sent) == len(requests) and set(sent.values()) == {1}
    assert set(Delivery.objects.values_list("state", flat=True)) == {Delivery.State.DELIVERED}


def test_lanes_start_no_send_once_the_lease_is_lost(account, slow_receiver, monkeypatch):
    receiver = slow_receiver(delay=0.1)
    endpoint = subscribe(account, receiver.url, types=[ACCEPTED])
    for _ in range(30):
        pay(account, "1.00")
    relay_once()
    monkeypatch.setattr(drain, "LEASE_CHECK_SECONDS", 0.02)
    keep = drain.Lease.keep

    def keep_until_three_arrived(lease: drain.Lease) -> bool:
        if len(receiver.posts) < 3:
            return keep(lease)
        lease.until = None  # another drain took the endpoint over (as when too slow to renew)
        return False

    monkeypatch.setattr(drain.Lease, "keep", keep_until_three_arrived)

    result = drain.endpoint_drain(endpoint.id)

    # The lanes finished the POSTs they had started, then stopped.
    assert 3 <= result.delivered == len(receiver.posts) <= 3 + 2 * drain.DRAIN_LANES
    assert Delivery.objects.filter(state=Delivery.State.DELIVERED).count() == result.delivered
    left = Delivery.objects.filter(state=Delivery.State.PENDING)
    assert left.count() == 30 - result.delivered and set(left.values_list("attempts", flat=True)) == {0}


def test_a_set_whose_first_deliveries_are_held_back_reads_on_to_what_may_go(
    account, slow_receiver, monkeypatch
):
    receiver = slow_receiver(delay=0.0)
    endpoint = subscribe(account, receiver.url)
    retrying = pay(account, "1.00")
    payment_settle(retrying)
    relay_once()
    # Its accepted event waits for a retry, so its settled one may not go.
    Delivery.objects.filter(event__resource_id=str(retrying.id), event__type=ACCEPTED).update(
        attempts=1, next_attempt_at=timezone.now() + timedelta(minutes=5)
    )
    # Another resource whose first event is not fanned out yet: its second may not go either.
    unsent = pay(account, "1.00")
    payment_settle(unsent)
    unsent_events = list(Event.objects.filter(resource_id=str(unsent.id)).order_by("id"))
    events_fan_out([unsent_events[1].id])
    free = pay(account, "1.00")
    events_fan_out(list(Event.objects.filter(resource_id=str(free.id)).values_list("id", flat=True)))
    monkeypatch.setattr(drain, "DRAIN_SET_SIZE", 1)  # a set per page: the first two are held back

    assert drain.endpoint_drain(endpoint.id).delivered == 1
    assert [(post.type, post.request_id) for post in receiver.posts] == [(ACCEPTED, str(free.id))]

    relay_once()  # the unsent accepted event is fanned out: both of that resource go, in order
    assert drain.endpoint_drain(endpoint.id).delivered == 2
    assert [post.type for post in receiver.of(str(unsent.id))] == [ACCEPTED, SETTLED]
    assert not receiver.of(str(retrying.id))


def test_past_its_deadline_a_drain_keeps_its_lease_until_the_lanes_are_done(
    account, slow_receiver, monkeypatch, settings
):
    # A lease renewed once less than an attempt's time (and a margin) is left: after a second here.
    settings.WEBHOOK_DELIVERY_LEASE_SECONDS = drain.ATTEMPT_TIMEOUT_SECONDS + 6
    receiver = slow_receiver(delay=0.5)
    endpoint = subscribe(account, receiver.url, types=[ACCEPTED])
    for _ in range(8):
        pay(account, "1.00")
    relay_once()
    monkeypatch.setattr(drain, "DRAIN_LANES", 1)  # eight posts one after another: a few seconds
    renewals = []
    keep = drain.Lease.keep

    def watched_keep(lease: drain.Lease) -> bool:
        before = lease.until
        kept = keep(lease)
        if kept and lease.until != before:
            renewals.append(lease.until)
        return kept

    monkeypatch.setattr(drain.Lease, "keep", watched_keep)

    result = drain.endpoint_drain(endpoint.id, seconds=0)  # the deadline has passed at once

    # What the lanes were handed went out, under a lease renewed meanwhile.
    assert (result.delivered, result.more) == (8, True)
    assert len(receiver.posts) == 8 and renewals
    assert WebhookEndpoint.objects.get(id=endpoint.id).drain_leased_until is None
