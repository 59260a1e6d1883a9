"""Webhook delivery never reads a test clock: an event about a clock customer is
dated at the clock's time in its body, but is signed, sent and retried in real
time, so a receiver's Standard Webhooks check (which refuses a timestamp far from
its own clock) accepts it and a failed attempt is retried in real minutes."""

from datetime import UTC, datetime, timedelta

from django.utils import timezone
from standardwebhooks import Webhook

from events.endpoints import endpoint_create
from events.models import Delivery
from events.tasks import deliveries_sweep
from tests.sandbox.helpers import as_customer, clock_make, customer_make, management
from tests.support.receiver import start_receiver

INCOMING = "incoming_payment.received"


def test_a_clock_customers_event_is_dated_by_the_clock_but_delivered_in_real_time(
    api, sandbox, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 60.0
    program = sandbox["consumerProgramId"]
    frozen = (timezone.now() + timedelta(days=300)).replace(microsecond=0)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    hook, server = start_receiver(script=[500])
    try:
        endpoint = endpoint_create(program_id=program, sandbox=True, url=hook.url, event_types=[INCOMING])

        # when money comes in to the clock customer's account, and the first attempt fails
        with django_capture_on_commit_callbacks(execute=True):
            incoming = api.post(
                f"/v1/sandbox/incoming-payments?programId={program}",
                {
                    "creditorIban": made["accountIban"],
                    "amount": "25.00",
                    "currency": "GBP",
                    "debtorName": "Acme",
                },
                format="json",
                **management(sandbox),
            )
        assert incoming.status_code == 200, incoming.content
        deliveries_sweep()
        assert hook.answered == [500]

        # then the retry waits its backoff in real time, not a year ahead
        delivery = Delivery.objects.get(endpoint=endpoint)
        assert delivery.state == Delivery.State.PENDING and delivery.attempts == 1
        wait = delivery.next_attempt_at - timezone.now()
        assert timedelta(seconds=30) < wait <= timedelta(seconds=75)
        assert abs(delivery.first_attempt_at - timezone.now()) < timedelta(minutes=1)

        # and once due, the retry is sent
        Delivery.objects.filter(id=delivery.id).update(next_attempt_at=timezone.now())
        deliveries_sweep()
    finally:
        server.shutdown()

    assert hook.answered == [500, 200]
    for item in hook.received:
        # the receiver's library verifies it: the signature and a timestamp near real time
        body = Webhook(endpoint.secret).verify(item.body, item.headers)
        sent = datetime.fromtimestamp(int(item.headers["webhook-timestamp"]), UTC)
        assert abs(sent - datetime.now(UTC)) < timedelta(minutes=1)
        assert body["type"] == INCOMING and datetime.fromisoformat(body["createdAt"]) == frozen
    assert hook.received[0].headers["webhook-id"] == hook.received[1].headers["webhook-id"]
    # the same text the events list shows the customer's user
    listed = api.get("/v1/events?limit=100", **as_customer(made, program))
    assert listed.status_code == 200, listed.content
    shown = {event["eventId"]: event["createdAt"] for event in listed.json()["data"]["events"]}
    assert shown[body["eventId"]] == body["createdAt"]
    delivery.refresh_from_db()
    assert delivery.state == Delivery.State.DELIVERED
    assert abs(delivery.delivered_at - timezone.now()) < timedelta(minutes=1)
