"""Webhook endpoints and signed deliveries to a real receiver on a loopback port.
Deliveries run in-process here, as on the embedded default; the
real-worker tests are in test_webhook_worker.py."""

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from bankapi.models import Account
from events.endpoints import endpoint_create
from events.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from events.tasks import deliveries_sweep
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import payment_settle
from tests.support.factories import funded_account, management_user
from tests.support.receiver import start_receiver

ACCEPTED = "payment_request.accepted"
SETTLED = "payment_request.settled"


@pytest.fixture
def management(db) -> dict[str, str]:
    """A management user's id token."""
    return management_user().id


@pytest.fixture
def program_query(account) -> str:
    """The payer's program, named as management names it."""
    return f"?programId={account.program_id}"


@pytest.fixture
def receiver():
    made = []

    def start(script=None):
        receiver_, server = start_receiver(script)
        made.append(server)
        return receiver_

    yield start
    for server in made:
        server.shutdown()


@pytest.fixture
def fast_retries(settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.0


def subscribe(account: Account, url: str, types=(ACCEPTED, SETTLED)) -> WebhookEndpoint:
    return endpoint_create(program_id=account.program_id, sandbox=True, url=url, event_types=list(types))


def pay(account: Account, amount: str = "3.00"):
    return payment_accept(
        account=account,
        instruction=PaymentInstruction(amount=Decimal(amount), currency=account.currency, reference="Hook"),
    )


def verified(endpoint: WebhookEndpoint, item) -> dict:
    """What a receiver does with the Standard Webhooks library: verify, then read."""
    return Webhook(endpoint.secret).verify(item.body, item.headers)


def test_create_answers_the_secret_once_and_the_list_never_shows_it(api, management, program_query):
    response = api.post(
        f"/v1/webhook-endpoints{program_query}",
        {"url": "https://hooks.example.com/bank", "eventTypes": [ACCEPTED]},
        format="json",
        **management,
    )
    assert response.status_code == 200
    created = response.json()["data"]
    assert created["secret"].startswith("whsec_")
    assert set(created) == {"endpointId", "url", "eventTypes", "secret", "createdAt"}

    listed = api.get(f"/v1/webhook-endpoints{program_query}", **management).json()["data"]
    entry = next(e for e in listed["webhookEndpoints"] if e["endpointId"] == created["endpointId"])
    assert "secret" not in entry
    assert created["secret"] not in json.dumps(listed)
    stored = WebhookEndpoint.objects.filter(id=created["endpointId"]).values_list("secret", flat=True).get()
    assert stored == created["secret"]


def test_the_secret_is_encrypted_at_rest(api, management, program_query):
    from django.db import connection

    created = api.post(
        f"/v1/webhook-endpoints{program_query}",
        {"url": "https://hooks.example.com/bank", "eventTypes": [ACCEPTED]},
        format="json",
        **management,
    ).json()["data"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM events_webhookendpoint")
        stored = [row[0] for row in cursor.fetchall()]
    assert len(stored) == 1
    assert created["secret"] not in stored[0]
    assert created["secret"].removeprefix("whsec_") not in stored[0]


@pytest.mark.parametrize(
    "body",
    [
        {"url": "https://hooks.example.com", "eventTypes": []},
        {"url": "https://hooks.example.com", "eventTypes": ["payment_request.exploded"]},
        {"url": "ftp://hooks.example.com", "eventTypes": [ACCEPTED]},
        {"url": "hooks.example.com", "eventTypes": [ACCEPTED]},
        {"url": "https://hooks.example.com", "eventTypes": [ACCEPTED], "secret": "mine"},
        {"eventTypes": [ACCEPTED]},
    ],
)
def test_bad_endpoint_bodies_are_400_and_create_nothing(api, management, program_query, body):
    before = WebhookEndpoint.objects.count()
    response = api.post(f"/v1/webhook-endpoints{program_query}", body, format="json", **management)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert WebhookEndpoint.objects.count() == before


def test_endpoint_routes_take_a_management_id_token_only(api, customer_auth, customer_id_auth, program_query):
    body = {"url": "https://hooks.example.com", "eventTypes": [ACCEPTED]}
    assert api.post("/v1/webhook-endpoints", body, format="json").status_code == 401
    assert api.post("/v1/webhook-endpoints", body, format="json", **customer_auth).status_code == 401
    response = api.post("/v1/webhook-endpoints", body, format="json", **customer_id_auth)
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"
    management_access = management_user().access
    assert api.get(f"/v1/webhook-endpoints{program_query}", **management_access).status_code == 401


def test_another_programs_endpoint_is_not_found(api, business, management, account):
    endpoint = subscribe(account, "https://hooks.example.com/a")
    other = f"?programId={business.program_id}"
    assert api.delete(f"/v1/webhook-endpoints/{endpoint.id}{other}", **management).status_code == 404
    assert (
        api.post(f"/v1/webhook-endpoints/{endpoint.id}/rotate-secret{other}", **management).status_code == 404
    )
    assert WebhookEndpoint.objects.filter(id=endpoint.id).exists()


def test_delete_removes_the_endpoint(api, management, program_query, account):
    endpoint = subscribe(account, "https://hooks.example.com/a")
    url = f"/v1/webhook-endpoints/{endpoint.id}{program_query}"
    response = api.delete(url, **management)
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}
    assert not WebhookEndpoint.objects.filter(id=endpoint.id).exists()
    assert api.delete(url, **management).status_code == 404


def test_a_payment_is_delivered_signed_to_the_subscribed_endpoint(
    account, receiver, django_capture_on_commit_callbacks
):
    hook = receiver()
    endpoint = subscribe(account, hook.url)

    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)

    assert len(hook.received) == 1
    body = verified(endpoint, hook.received[0])
    event = Event.objects.get(resource_id=str(request.id))
    assert body == {
        "eventId": str(event.event_id),
        "type": ACCEPTED,
        "createdAt": event.created_at.isoformat(),
        "sandbox": True,
        "data": event.data,
    }
    assert hook.received[0].headers["webhook-id"] == str(event.event_id)
    assert Delivery.objects.get(event=event).state == Delivery.State.DELIVERED


def test_a_tampered_body_or_another_secret_does_not_verify(
    account, receiver, django_capture_on_commit_callbacks
):
    from standardwebhooks.webhooks import WebhookVerificationError

    hook = receiver()
    endpoint = subscribe(account, hook.url)
    other = subscribe(account, "https://hooks.example.com/other")
    with django_capture_on_commit_callbacks(execute=True):
        pay(account)
    item = hook.received[0]
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint.secret).verify(item.body.replace(b"3.00", b"9.00"), item.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(other.secret).verify(item.body, item.headers)


def test_unsubscribed_types_and_other_programs_get_nothing(
    business, account, receiver, django_capture_on_commit_callbacks
):
    only_settled = receiver()
    subscribe(account, only_settled.url, types=[SETTLED])
    business_hook = receiver()
    business_account = funded_account(business.customer, "0")
    subscribe(business_account, business_hook.url)

    with django_capture_on_commit_callbacks(execute=True):
        pay(account)

    assert only_settled.received == []
    assert business_hook.received == []


def test_a_receiver_failing_three_times_gets_the_event_exactly_once(
    account, receiver, fast_retries, django_capture_on_commit_callbacks
):
    hook = receiver(script=[500, 500, 500])
    endpoint = subscribe(account, hook.url)
    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)

    for _ in range(5):
        deliveries_sweep()

    assert hook.answered == [500, 500, 500, 200]
    assert len(hook.accepted()) == 1
    assert len({item.headers["webhook-id"] for item in hook.received}) == 1
    delivery = Delivery.objects.get(event__resource_id=str(request.id))
    assert (delivery.state, delivery.attempts) == (Delivery.State.DELIVERED, 4)
    attempts = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("id"))
    assert [a.status_code for a in attempts] == [500, 500, 500, 200]
    assert all(a.latency_ms >= 0 for a in attempts)
    assert WebhookEndpoint.objects.get(id=endpoint.id).failing_since is None


def test_an_undelivered_event_holds_back_later_events_of_the_same_resource(
    account, receiver, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 60.0
    hook = receiver(script=[503])
    endpoint = subscribe(account, hook.url)
    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)
    with django_capture_on_commit_callbacks(execute=True):
        payment_settle(request)
    with django_capture_on_commit_callbacks(execute=True):
        unrelated = pay(account)

    # The settlement waits behind the accepted event's retry; another resource does not.
    received = [
        (verified(endpoint, item)["type"], verified(endpoint, item)["data"]["requestId"])
        for item in hook.received
    ]
    assert received == [(ACCEPTED, str(request.id)), (ACCEPTED, str(unrelated.id))]
    Delivery.objects.filter(state=Delivery.State.PENDING).update(next_attempt_at=timezone.now())
    deliveries_sweep()
    delivered = [verified(endpoint, item) for item in hook.accepted()]
    assert [
        (d["type"], d["data"]["requestId"]) for d in delivered if d["data"]["requestId"] == str(request.id)
    ] == [
        (ACCEPTED, str(request.id)),
        (SETTLED, str(request.id)),
    ]


def test_retries_wait_for_their_backoff(account, receiver, settings, django_capture_on_commit_callbacks):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 60.0
    hook = receiver(script=[500])
    subscribe(account, hook.url)
    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)

    deliveries_sweep()

    assert hook.answered == [500]
    delivery = Delivery.objects.get(event__resource_id=str(request.id))
    wait = delivery.next_attempt_at - timezone.now()
    assert timedelta(seconds=30) < wait <= timedelta(seconds=75)


def test_an_endpoint_failing_for_the_whole_window_is_disabled(
    account, receiver, fast_retries, django_capture_on_commit_callbacks
):
    hook = receiver(script=[500, 500])
    endpoint = subscribe(account, hook.url)
    WebhookEndpoint.objects.filter(id=endpoint.id).update(failing_since=timezone.now() - timedelta(hours=73))

    with django_capture_on_commit_callbacks(execute=True):
        pay(account)

    endpoint.refresh_from_db()
    assert endpoint.enabled is False
    assert "HTTP 500" in endpoint.disabled_reason
    deliveries_sweep()
    assert hook.answered == [500]


def test_redelivery_sends_the_event_again_with_the_same_id(
    api, customer_auth, account, receiver, django_capture_on_commit_callbacks
):
    hook = receiver()
    subscribe(account, hook.url)
    with django_capture_on_commit_callbacks(execute=True):
        request = pay(account)
    event = Event.objects.get(resource_id=str(request.id))

    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(f"/v1/events/{event.event_id}/redeliver", **customer_auth)

    assert response.status_code == 200
    assert response.json()["data"] == {"eventId": str(event.event_id), "queued": 1}
    assert [item.headers["webhook-id"] for item in hook.received] == [str(event.event_id)] * 2


def test_a_rotated_secret_signs_beside_the_old_one_for_a_day(
    api, management, program_query, account, receiver, django_capture_on_commit_callbacks
):
    hook = receiver()
    endpoint = subscribe(account, hook.url)
    old_secret = endpoint.secret

    response = api.post(f"/v1/webhook-endpoints/{endpoint.id}/rotate-secret{program_query}", **management)
    new_secret = response.json()["data"]["secret"]
    with django_capture_on_commit_callbacks(execute=True):
        pay(account)

    item = hook.received[0]
    assert new_secret != old_secret
    assert len(item.headers["webhook-signature"].split(" ")) == 2
    Webhook(old_secret).verify(item.body, item.headers)
    Webhook(new_secret).verify(item.body, item.headers)

    WebhookEndpoint.objects.filter(id=endpoint.id).update(previous_secret_expires_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        pay(account)
    assert len(hook.received[1].headers["webhook-signature"].split(" ")) == 1


def test_a_lost_fan_out_is_picked_up_by_the_sweep(account, receiver):
    hook = receiver()
    subscribe(account, hook.url)
    request = pay(account)  # the on-commit fan-out never runs: as if its task were lost
    Event.objects.filter(resource_id=str(request.id)).update(written_at=timezone.now() - timedelta(minutes=5))

    deliveries_sweep()

    assert [json.loads(item.body)["data"]["requestId"] for item in hook.received] == [str(request.id)]


def test_the_document_describes_each_delivery_payload(api):
    from events.schema import PAYLOADS

    document = api.get("/v1/openapi.json").json()
    callbacks = document["paths"]["/v1/webhook-endpoints"]["post"]["callbacks"]
    assert set(callbacks) == {str(event_type) for event_type in PAYLOADS}
    schemas = document["components"]["schemas"]
    for name, callback in callbacks.items():
        body = callback["{$request.body#/url}"]["post"]["requestBody"]["content"]["application/json"][
            "schema"
        ]
        event = schemas[body["$ref"].rsplit("/", 1)[1]]
        type_enum = schemas[event["properties"]["type"]["$ref"].rsplit("/", 1)[1]]
        assert type_enum["enum"] == [name]
        assert event["properties"]["data"]["$ref"].startswith("#/components/schemas/")
