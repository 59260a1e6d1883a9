"""The admin index: work waiting for operators and today's payment volume."""

import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from bankapi.backoffice import dashboard
from payments.models import PaymentRequest
from tests.backoffice.conftest import held_payments, pending_payment


def _lines(body: str) -> list[str]:
    return re.findall(r'<li class="counter">(?:<a [^>]*>)?([^<]+)', body)


def test_index_shows_the_counts_that_need_action_above_the_app_list(staff_client, account):
    held_payments(account, 2)
    client = staff_client("compliance")

    page = client.get("/admin/")

    body = page.content.decode()
    assert page.status_code == 200
    assert _lines(body) == [
        "Held payments to review: 2",
        "Failed batch items: 0",
        "Applications in review: 0",
        "Webhook endpoints failing: 0",
    ]
    assert "Oldest undelivered event: none" in body
    # Django's app list is kept, below the dashboard.
    assert body.index("Held payments to review") < body.index('class="app-payments module')
    assert "/admin/payments/paymentrequest/?status__exact=PENDING_TM" in body


def test_index_shows_today_volume_per_currency_with_a_chart(staff_client, account):
    pending_payment(account, "25.00")
    pending_payment(account, "1000.50")
    failed = pending_payment(account, "7.00")
    PaymentRequest.objects.filter(id=failed.id).update(status="FAILED")
    client = staff_client("support")

    body = client.get("/admin/").content.decode()

    rows = re.findall(r'<tr class="volume-row">(.*?)</tr>', body, re.S)
    assert len(rows) == 1
    cells = re.findall(r"<td[^>]*>\s*(.*?)\s*</td>", rows[0], re.S)
    assert cells[:4] == ["GBP", "sandbox", "2", "1,025.50 GBP"]
    assert "<svg" in rows[0] and rows[0].count("<rect") == 24
    assert "cdn" not in body.lower()


def test_volume_is_per_currency_and_environment():
    rows = [
        dashboard.Volume(
            currency="EUR", sandbox=False, payments=1, amount=Decimal("5"), hourly=(Decimal(5),) * 24
        )
    ]
    assert rows[0].bars()[0]["height"] == 40


def test_an_unknown_counter_label_is_refused():
    with pytest.raises(ValueError):
        dashboard.counter_register("Something else", lambda: (1, None))


def test_staff_without_a_group_see_an_empty_dashboard_but_no_apps(staff_client):
    client = staff_client(None)
    page = client.get("/admin/")
    assert page.status_code == 200
    assert "app-payments" not in page.content.decode()
    assert Group.objects.filter(name="compliance").exists()


def test_index_shows_failing_webhook_endpoints_and_the_oldest_undelivered_event(staff_client, program):
    from datetime import timedelta

    from django.utils import timezone

    from events.models import Delivery, Event, WebhookEndpoint

    endpoint = WebhookEndpoint.objects.create(
        program=program, sandbox=True, url="https://hooks.example/a", failing_since=timezone.now()
    )
    WebhookEndpoint.objects.create(program=program, sandbox=True, url="https://hooks.example/b")
    event = Event.objects.create(
        program=program,
        sandbox=True,
        type="payment_request.settled",
        resource_type="x",
        resource_id="1",
        data={},
    )
    delivery = Delivery.objects.create(
        event=event, endpoint=endpoint, resource_key="x:1", next_attempt_at=timezone.now()
    )
    Delivery.objects.filter(id=delivery.id).update(created_at=timezone.now() - timedelta(hours=2, minutes=5))
    client = staff_client("support")

    body = client.get("/admin/").content.decode()

    assert "Webhook endpoints failing: 1" in _lines(body)
    fact = re.search(r'<li class="fact">(?:<a href="([^"]*)">)?([^<]+)', body)
    assert fact.group(2) == "Oldest undelivered event: 2\xa0hours, 5\xa0minutes ago (payment_request.settled)"
    assert fact.group(1) == "/admin/events/delivery/?state__exact=PENDING"
    assert client.get(fact.group(1)).status_code == 200
    assert client.get("/admin/events/webhookendpoint/?failing_since__isnull=False").status_code == 200


def test_the_volume_chart_is_labelled(staff_client, account):
    pending_payment(account, "25.00")
    client = staff_client("support")

    body = client.get("/admin/").content.decode()

    chart = re.search(r'<svg class="volume-chart".*?</svg>', body, re.S).group(0)
    assert 'aria-label="GBP amount by hour, busiest hour 25.00 GBP"' in chart
    assert [label for label in re.findall(r"<text[^>]*>([^<]+)</text>", chart)] == [
        "00",
        "06",
        "12",
        "18",
        "23",
        "25",
        "0",
    ]


def test_the_index_names_models_in_plain_english_and_view_site_opens_the_api_reference(staff_client):
    from authn.models import User

    client = staff_client(None)
    client.force_login(
        User.objects.create_superuser("root@backoffice.example", "Root-Password-4242", role="management")
    )

    body = client.get("/admin/").content.decode()

    names = re.findall(r'<th scope="row"[^>]*>\s*<a [^>]*>([^<]+)</a>', body)
    assert {"Beneficiaries", "Deliveries", "SCA challenges", "FX quotes", "FX rates"} <= set(names)
    assert not [name for name in names if name.endswith("ys") or name.startswith(("Sca ", "Fx "))]
    assert '<a href="/v1/docs">View site</a>' in body
    assert client.get("/v1/docs").status_code == 200
