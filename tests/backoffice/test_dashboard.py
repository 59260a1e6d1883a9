"""The admin index: work waiting for operators and today's payment volume."""

import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from bankapi import dashboard
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
    ]
    # Django's app list is kept, below the dashboard.
    assert body.index("Held payments to review") < body.index('class="app-payments module')
    assert "/admin/payments/paymentrequest/?status__exact=PENDING_TM" in body


def test_index_shows_today_volume_per_currency_with_a_chart(staff_client, account, sandbox):
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
