"""The outbox relay: with a broker, a request only writes its event row; the relay
fans it out and queues its delivery. At least once, never twice, whatever two
relays at once or a relay dying halfway do."""

import json
import threading
from collections import Counter

import pytest

from config.celery import app
from events import delivery, relay, tasks
from events.models import Delivery, Event
from events.relay import relay_once
from events.tasks import deliveries_sweep
from tests.conftest import requires_postgres
from tests.events.test_webhooks import pay, receiver, subscribe  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(monkeypatch):
    """Requests as with a broker: nothing runs in-process after commit, and nothing
    may be published from the request (a publish fails the test)."""
    from events.tasks import deliveries_drain, events_fan_out

    published = []

    def guarded(task):
        send = task.delay

        def delay(*args, **kwargs):
            if not app.conf.task_always_eager:
                published.append((task.name, args))
                raise AssertionError(f"{task.name} was published to the broker")
            return send(*args, **kwargs)  # a test's relay pass, its drains run here

        return delay

    for task in (events_fan_out, deliveries_drain):
        monkeypatch.setattr(task, "delay", guarded(task))
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield published
    app.conf.task_always_eager = previous


def requests_received(hook) -> list[str]:
    return [json.loads(item.body)["data"]["requestId"] for item in hook.received]


def test_with_a_broker_the_request_only_writes_the_event_and_the_relay_delivers_it(
    account,  # noqa: F811
    receiver,  # noqa: F811
    broker,
    django_capture_on_commit_callbacks,
):
    hook = receiver()
    subscribe(account, hook.url)

    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)
    event = Event.objects.get(resource_id=str(request.id))
    assert (event.fanned_out, Delivery.objects.filter(event=event).count()) == (False, 0)
    assert broker == []

    app.conf.task_always_eager = True  # the relay's drains run here instead of on a worker
    with django_capture_on_commit_callbacks(execute=True):
        moved = relay_once()

    assert moved >= 1
    assert requests_received(hook) == [str(request.id)]
    event.refresh_from_db()
    assert event.fanned_out
    assert Delivery.objects.get(event=event).state == Delivery.State.DELIVERED
    relay_once()  # the next pass sends nothing again
    assert requests_received(hook) == [str(request.id)]


def test_without_a_broker_the_event_is_still_delivered_in_process_at_commit(
    account,  # noqa: F811
    receiver,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    hook = receiver()
    subscribe(account, hook.url)

    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)

    relay_once()
    assert requests_received(hook) == [str(request.id)]


def test_a_relay_dying_before_its_commit_leaves_the_events_for_the_next_pass(
    account,  # noqa: F811
    receiver,  # noqa: F811
    broker,
    monkeypatch,
):
    hook = receiver()
    subscribe(account, hook.url)
    requests = [pay(account, "1.00") for _ in range(3)]
    app.conf.task_always_eager = True
    real_create = delivery.deliveries_create

    def create_then_die(events):
        real_create(events)
        raise RuntimeError("the relay's process died")

    monkeypatch.setattr(delivery, "deliveries_create", create_then_die)
    with pytest.raises(RuntimeError):
        relay_once()
    assert Delivery.objects.count() == 0
    assert Event.objects.filter(fanned_out=False, resource_id__in=[str(r.id) for r in requests]).count() == 3

    monkeypatch.setattr(delivery, "deliveries_create", real_create)
    relay_once()

    assert sorted(requests_received(hook)) == sorted(str(r.id) for r in requests)


def test_a_relay_dying_after_its_commit_is_finished_by_the_sweep_once(
    account,  # noqa: F811
    receiver,  # noqa: F811
    broker,
    monkeypatch,
):
    hook = receiver()
    subscribe(account, hook.url)
    request = pay(account)
    app.conf.task_always_eager = True

    def die(endpoints):
        raise RuntimeError("the relay's process died before queueing the drains")

    monkeypatch.setattr(relay, "drains_enqueue", die)
    with pytest.raises(RuntimeError):
        relay_once()
    assert Delivery.objects.get(event__resource_id=str(request.id)).state == Delivery.State.PENDING
    assert hook.received == []

    deliveries_sweep()  # what beat runs every 30 s
    deliveries_sweep()

    assert requests_received(hook) == [str(request.id)]
    monkeypatch.setattr(relay, "drains_enqueue", tasks.drains_enqueue)
    relay_once()
    assert requests_received(hook) == [str(request.id)]


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_relays_at_once_take_different_events_and_deliver_each_once(
    account,  # noqa: F811
    receiver,  # noqa: F811
    broker,
    monkeypatch,
):
    hook = receiver()
    subscribe(account, hook.url)
    requests = [pay(account, "1.00") for _ in range(30)]
    app.conf.task_always_eager = True
    # The first relay holds its batch locked until the second has taken its own:
    # with SKIP LOCKED the second takes other events instead of waiting.
    first_holds, second_done = threading.Event(), threading.Event()
    real_create = delivery.deliveries_create
    claimed: dict[str, list[int]] = {}

    def create(events):
        name = threading.current_thread().name
        claimed[name] = [event.id for event in events]
        if name == "first":
            first_holds.set()
            assert second_done.wait(30), "the second relay waited for the first one's locks"
        return real_create(events)

    monkeypatch.setattr(delivery, "deliveries_create", create)
    errors = []

    def run(name: str, limit: int) -> None:
        from django.db import connection

        try:
            if name == "second":
                assert first_holds.wait(30)
            relay_once(limit)
            if name == "second":
                second_done.set()
        except Exception as error:  # noqa: BLE001 - asserted below, from the test's thread
            errors.append(error)
            second_done.set()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(name, 10), name=name) for name in ("first", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(claimed["first"]) == len(claimed["second"]) == 10
    assert set(claimed["first"]).isdisjoint(claimed["second"])

    while relay_once(10):  # the rest of the outbox
        pass

    sent = Counter(item.headers["webhook-id"] for item in hook.received)
    assert len(sent) == len(requests) and set(sent.values()) == {1}
    assert sorted(requests_received(hook)) == sorted(str(r.id) for r in requests)
    assert Delivery.objects.filter(state=Delivery.State.DELIVERED).count() == len(requests)


def test_the_relay_loop_survives_a_failed_pass_and_goes_on(monkeypatch):
    looper = relay.OutboxRelay(poll_seconds=0.0, batch=10)
    passes: list[int] = []

    def one_pass(limit, send=None):
        passes.append(limit)
        if len(passes) == 1:
            raise RuntimeError("the database went away")
        looper.stopping.set()
        return 0

    monkeypatch.setattr(relay, "relay_once", one_pass)
    looper.run()  # in this thread: returns once stopped

    assert passes == [10, 10]
