"""An operator follows a request to its webhooks: the event a request writes keeps
the request's id, and the fan-out and every delivery attempt of that event log
under it, whichever path sends it (the outbox relay, a Celery task, the fan-out
run in-process after commit without a broker). The id stays internal: webhook
bodies do not carry it."""

import contextvars
import json
import logging
import uuid

import pytest
from rest_framework.test import APIClient

from bankapi.ops.logs import ContextFilter, log_context
from config.celery import app
from events.models import Delivery, Event
from events.relay import relay_once
from events.tasks import deliveries_drain, deliveries_sweep
from payments.models import PaymentRequest
from payments.services.settlement import payment_settle
from tests.events.test_relay import broker  # noqa: F401 - fixture
from tests.events.test_webhooks import fast_retries, pay, receiver, subscribe  # noqa: F401 - fixtures
from tests.payments.conftest import payments_url
from tests.support.factories_backoffice import operator_user

pytestmark = pytest.mark.django_db

PAYLOAD_KEYS = {"eventId", "type", "createdAt", "sandbox", "data"}


class Records(logging.Handler):
    """The records of the events app's loggers, each stamped by the service's own
    context filter (as the console handler stamps it) in the thread that logs it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.addFilter(ContextFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def about(self, text: str) -> list[logging.LogRecord]:
        """The records whose message mentions `text` (an event id, a delivery)."""
        return [record for record in self.records if text in record.getMessage()]

    def request_ids(self, text: str) -> set[str | None]:
        return {record.request_id for record in self.about(text)}

    def fan_out(self, event: Event) -> list[logging.LogRecord]:
        return [record for record in self.about(str(event.event_id)) if "fanned out" in record.getMessage()]

    def attempts(self, event: Event) -> list[logging.LogRecord]:
        return self.about(f"of event {event.event_id} ")


@pytest.fixture
def logs():
    records = Records()
    loggers = [logging.getLogger(name) for name in ("events", "tests.events")]
    levels = [found.level for found in loggers]
    for found in loggers:
        found.addHandler(records)
        found.setLevel(logging.INFO)
    yield records
    for found, level in zip(loggers, levels, strict=True):
        found.removeHandler(records)
        found.setLevel(level)


def pay_over_http(account, beneficiary, auth, request_id: str, client=None):
    response = (client or APIClient()).post(
        payments_url(account.customer_id, account.id),
        {"amount": "2.50", "reference": "Traced", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_X_REQUEST_ID=request_id,
        **auth,
    )
    assert response.status_code == 200, response.json()
    assert response["X-Request-Id"] == request_id
    return Event.objects.get(resource_id=response.json()["data"]["bankTransfer"]["requestId"])


def outside_any_request(work, *args):
    """`work` run as a beat job, a command or the relay's thread runs: in a context
    of its own that no request bound (whatever requests this thread made before)."""
    return contextvars.Context().run(work, *args)


def delivered_bodies(hook) -> list[dict]:
    return [json.loads(item.body) for item in hook.received]


def test_a_payment_made_over_http_writes_its_event_with_the_request_id(account, beneficiary, customer_auth):
    event = pay_over_http(account, beneficiary, customer_auth, "req-trace-1")

    assert event.request_id == "req-trace-1"


def test_the_longest_request_id_a_caller_may_send_fits_its_event_and_a_longer_one_is_replaced(
    account, beneficiary, customer_auth
):
    longest = "r" * 128
    assert pay_over_http(account, beneficiary, customer_auth, longest).request_id == longest

    response = APIClient().post(
        payments_url(account.customer_id, account.id),
        {"amount": "2.50", "reference": "Traced", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_X_REQUEST_ID="r" * 129,
        **customer_auth,
    )
    assert response.status_code == 200, response.json()
    made = response["X-Request-Id"]
    assert str(uuid.UUID(made)) == made  # the service's own id, not the caller's
    event = Event.objects.get(resource_id=response.json()["data"]["bankTransfer"]["requestId"])
    assert event.request_id == made


def test_an_event_written_outside_a_request_has_no_request_id(account):
    request = outside_any_request(pay, account)  # as a beat job or a command pays

    assert Event.objects.get(resource_id=str(request.id)).request_id is None


def test_the_relay_logs_each_event_of_a_batch_under_its_own_request(
    account,
    beneficiary,
    customer_auth,
    receiver,  # noqa: F811
    broker,  # noqa: F811
    logs,
    django_capture_on_commit_callbacks,
):
    hook = receiver()
    subscribe(account, hook.url)
    with django_capture_on_commit_callbacks(execute=True):
        first = pay_over_http(account, beneficiary, customer_auth, "req-trace-a")
    with django_capture_on_commit_callbacks(execute=True):
        second = pay_over_http(account, beneficiary, customer_auth, "req-trace-b")
    unrequested = Event.objects.get(resource_id=str(outside_any_request(pay, account).id))
    assert broker == []  # nothing left the requests: the relay takes the three events
    app.conf.task_always_eager = True  # the relay's drains run here instead of on a worker

    def relay_pass() -> int:
        moved = relay_once()
        logging.getLogger("tests.events").info("after the relay pass")
        return moved

    assert outside_any_request(relay_pass) >= 3

    for event, request_id in ((first, "req-trace-a"), (second, "req-trace-b"), (unrequested, None)):
        fan_out, attempts = logs.fan_out(event), logs.attempts(event)
        assert [record.getMessage() for record in fan_out] == [
            f"event {event.event_id} (payment_request.accepted of {event.resource_key}) "
            f"fanned out to endpoint(s) {Delivery.objects.get(event=event).endpoint_id}"
        ]
        assert len(attempts) == 1 and "delivered (HTTP 200), attempt 1" in attempts[0].getMessage()
        assert {record.request_id for record in fan_out + attempts} == {request_id}
    # The relay's thread went back to its own context after each event.
    assert logs.request_ids("after the relay pass") == {None}
    # Delivered as before, and the bodies never show the request id.
    assert sorted(body["data"]["requestId"] for body in delivered_bodies(hook)) == sorted(
        event.resource_id for event in (first, second, unrequested)
    )
    assert all(set(body) == PAYLOAD_KEYS for body in delivered_bodies(hook))
    assert not any(b"req-trace" in item.body for item in hook.received)


def test_without_a_broker_the_delivery_at_commit_logs_the_requests_id(
    account,
    beneficiary,
    customer_auth,
    receiver,  # noqa: F811
    logs,
    django_capture_on_commit_callbacks,
):
    hook = receiver()
    subscribe(account, hook.url)

    with django_capture_on_commit_callbacks(execute=True):
        event = pay_over_http(account, beneficiary, customer_auth, "req-trace-2")

    fan_out, attempts = logs.fan_out(event), logs.attempts(event)
    assert len(fan_out) == 1
    assert len(attempts) == 1 and "delivered (HTTP 200), attempt 1" in attempts[0].getMessage()
    assert {record.request_id for record in fan_out + attempts} == {"req-trace-2"}
    assert len(hook.received) == 1
    assert set(delivered_bodies(hook)[0]) == PAYLOAD_KEYS
    assert b"req-trace-2" not in hook.received[0].body


def test_a_failed_attempt_and_its_retry_by_the_sweep_log_the_requests_id(
    account,
    beneficiary,
    customer_auth,
    receiver,  # noqa: F811
    fast_retries,  # noqa: F811
    logs,
    django_capture_on_commit_callbacks,
):
    hook = receiver(script=[500])
    subscribe(account, hook.url)
    with django_capture_on_commit_callbacks(execute=True):
        event = pay_over_http(account, beneficiary, customer_auth, "req-trace-3")

    # What beat runs, outside any request: the retry is due at once here.
    outside_any_request(deliveries_sweep)

    attempts = logs.attempts(event)
    assert ["failed (HTTP 500), attempt 1" in record.getMessage() for record in attempts] == [True, False]
    assert "delivered (HTTP 200), attempt 2" in attempts[1].getMessage()
    assert {record.request_id for record in attempts} == {"req-trace-3"}
    assert Delivery.objects.get(event=event).state == Delivery.State.DELIVERED
    assert hook.answered == [500, 200]


def drain_tasks_after_the_relay(monkeypatch) -> list[tuple[tuple, str | None]]:
    """One relay pass, then the drain tasks it queued run here, outside any request,
    as a worker runs them; answers the tasks they queued in turn (a retry), each
    with the request id its message would carry."""
    queued: list[tuple[tuple, str | None]] = []
    monkeypatch.setattr(
        deliveries_drain,
        "apply_async",
        lambda args, eta=None: queued.append((tuple(args), log_context().get("request_id"))),
    )
    outside_any_request(relay_once)
    relayed, queued[:] = list(queued), []
    for args, _ in relayed:
        outside_any_request(deliveries_drain, *args)
    return queued


def test_a_retry_the_drain_queues_carries_the_request_id_of_the_failed_event(
    account,
    beneficiary,
    customer_auth,
    receiver,  # noqa: F811
    broker,  # noqa: F811
    logs,
    monkeypatch,
):
    hook = receiver(script=[503])
    endpoint = subscribe(account, hook.url)
    event = pay_over_http(account, beneficiary, customer_auth, "req-trace-5")

    queued = drain_tasks_after_the_relay(monkeypatch)

    assert queued == [((str(endpoint.id),), "req-trace-5")]
    [attempt] = logs.attempts(event)
    assert "failed (HTTP 503), attempt 1, retry at" in attempt.getMessage()
    assert attempt.request_id == "req-trace-5"
    [summary] = logs.about("webhook drain: 0 delivered")
    assert summary.request_id is None


def test_a_drain_holding_events_of_two_requests_logs_each_attempt_under_its_own(
    account,
    beneficiary,
    customer_auth,
    receiver,  # noqa: F811
    broker,  # noqa: F811
    logs,
    monkeypatch,
):
    hook = receiver()
    subscribe(account, hook.url)
    accepted = pay_over_http(account, beneficiary, customer_auth, "req-trace-6")
    # Settled later by the bank's side, outside any request: same resource, same endpoint.
    outside_any_request(payment_settle, PaymentRequest.objects.get(id=accepted.resource_id))
    settled = Event.objects.get(resource_id=accepted.resource_id, type="payment_request.settled")

    assert drain_tasks_after_the_relay(monkeypatch) == []

    assert [body["type"] for body in delivered_bodies(hook)] == [accepted.type, settled.type]
    assert [record.request_id for record in logs.attempts(accepted)] == ["req-trace-6"]
    assert [record.request_id for record in logs.attempts(settled)] == [None]
    # The drain's line about the whole endpoint names no one request.
    [summary] = logs.about("webhook drain: 2 delivered")
    assert summary.request_id is None


def test_the_event_admin_shows_the_request_id_read_only(account, beneficiary, customer_auth):
    event = pay_over_http(account, beneficiary, customer_auth, "req-trace-admin")
    client = APIClient()
    client.force_login(operator_user())

    page = client.get(f"/admin/events/event/{event.id}/change/")

    assert page.status_code == 200
    text = page.content.decode()
    assert "req-trace-admin" in text
    assert 'name="request_id"' not in text  # shown, not a form field
