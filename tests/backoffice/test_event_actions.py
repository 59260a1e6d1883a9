"""Webhook endpoints and events in the back office: the secret shown once, outages
recovered, events redelivered; each through the events services."""

from decimal import Decimal

from django.contrib.admin.models import LogEntry

from bankapi.models import Account
from events.models import Delivery, Event, EventType, WebhookEndpoint
from events.services import endpoint_create
from payments.services.acceptance import PaymentInstruction, payment_accept

ENDPOINTS = "/admin/events/webhookendpoint/"
CARD = EventType.CARD_ISSUED


def _messages(response) -> list[str]:
    return [str(m) for m in response.wsgi_request._messages]


def test_an_endpoint_made_in_admin_shows_its_secret_once(staff_client, sandbox):
    client = staff_client("administrator")
    response = client.post(
        f"{ENDPOINTS}add/",
        {
            "program": sandbox["consumerProgramId"],
            "sandbox": "on",
            "url": "https://hooks.example.com/admin",
            "event_types": [EventType.PAYMENT_REQUEST_SETTLED],
        },
    )

    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get(url="https://hooks.example.com/admin")
    (shown,) = [m for m in _messages(response) if m.startswith("Signing secret")]
    assert shown.endswith(endpoint.secret)
    client.get(ENDPOINTS)  # the page the add redirects to shows the message, once
    page = client.get(f"{ENDPOINTS}{endpoint.id}/change/")
    assert page.status_code == 200
    assert endpoint.secret not in page.content.decode()


def test_a_production_endpoint_on_a_private_address_is_refused_in_admin(staff_client, sandbox):
    client = staff_client("administrator")
    response = client.post(
        f"{ENDPOINTS}add/",
        {
            "program": sandbox["consumerProgramId"],
            "url": "https://10.0.0.5/hooks",
            "event_types": ["card.issued"],
        },
    )
    assert response.status_code == 200
    assert not WebhookEndpoint.objects.filter(url="https://10.0.0.5/hooks").exists()


def test_reenabling_an_endpoint_clears_its_outage_and_is_logged(staff_client, sandbox):
    account = Account.objects.get(id=sandbox["customer"]["accountId"])
    endpoint = endpoint_create(
        program_id=account.program_id,
        sandbox=True,
        url="https://hooks.example.com/x",
        event_types=["card.issued"],
    )
    WebhookEndpoint.objects.filter(id=endpoint.id).update(enabled=False, disabled_reason="Failing since ...")
    client = staff_client("administrator")

    response = client.post(
        ENDPOINTS, {"action": "enable_selected", "index": "0", "_selected_action": [str(endpoint.id)]}
    )

    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.enabled, endpoint.disabled_reason) == (True, "")
    assert LogEntry.objects.filter(object_id=str(endpoint.id), change_message="Re-enabled").exists()


def test_redelivering_an_event_from_admin_queues_a_delivery(staff_client, sandbox):
    account = Account.objects.get(id=sandbox["customer"]["accountId"])
    endpoint = endpoint_create(
        program_id=account.program_id,
        sandbox=True,
        url="https://hooks.example.com/y",
        event_types=[EventType.PAYMENT_REQUEST_ACCEPTED],
    )
    request = payment_accept(
        account=account, instruction=PaymentInstruction(amount=Decimal("1.00"), currency="GBP", reference="x")
    )
    event = Event.objects.get(resource_id=str(request.id))

    response = staff_client("administrator").post(
        "/admin/events/event/",
        {"action": "redeliver_selected", "index": "0", "_selected_action": [str(event.id)]},
    )

    assert response.status_code == 302
    assert Delivery.objects.filter(event=event, endpoint=endpoint, redelivery=True).count() == 1


def test_support_cannot_touch_endpoints(staff_client, sandbox):
    client = staff_client("support")
    response = client.post(
        f"{ENDPOINTS}add/",
        {
            "program": sandbox["consumerProgramId"],
            "url": "https://hooks.example.com/s",
            "event_types": ["card.issued"],
        },
    )
    assert response.status_code == 403
    assert not WebhookEndpoint.objects.filter(url="https://hooks.example.com/s").exists()
