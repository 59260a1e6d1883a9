"""Operators see payment requests and schedules in admin, read-only."""

from datetime import date
from decimal import Decimal

from django.contrib.auth.models import Permission

from authn.models import User
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.schedules import schedule_create, scheduled_payments_run


def test_operators_read_payment_requests_and_schedules_without_changing_them(client, sandbox, account):
    instruction = PaymentInstruction(amount=Decimal("5.00"), currency="GBP", reference="Admin view")
    request = payment_accept(account=account, instruction=instruction)
    schedule = schedule_create(
        account=account, instruction=instruction, anchor=date(2026, 3, 10), frequency="DAILY"
    )
    scheduled_payments_run(date(2026, 3, 10))
    client.force_login(User.objects.get(email=sandbox["operator"]["email"], program=None))

    pages = [
        client.get("/admin/payments/paymentrequest/"),
        client.get(f"/admin/payments/paymentrequest/{request.id}/change/"),
        client.get("/admin/payments/scheduledpayment/"),
        client.get(f"/admin/payments/scheduledpayment/{schedule.id}/change/"),
    ]
    change = client.post(f"/admin/payments/paymentrequest/{request.id}/change/", {"status": "SETTLED"})

    assert [page.status_code for page in pages] == [200, 200, 200, 200]
    assert b"Admin view" in pages[1].content
    assert change.status_code == 403
    request.refresh_from_db()
    assert request.status == "PENDING"


def _held_payments(account, count: int) -> list:
    instruction = PaymentInstruction(amount=Decimal("12000.00"), currency="GBP", reference="Large invoice")
    return [payment_accept(account=account, instruction=instruction) for _ in range(count)]


def _review(client, action: str, payments) -> None:
    response = client.post(
        "/admin/payments/paymentrequest/",
        {"action": action, "index": "0", "_selected_action": [str(p.id) for p in payments]},
    )
    assert response.status_code == 302


def test_compliance_approves_a_held_payment_in_admin_and_it_can_settle(client, sandbox, account):
    held, other = _held_payments(account, 2)
    assert held.status == "PENDING_TM"
    client.force_login(User.objects.get(email=sandbox["operator"]["email"], program=None))

    _review(client, "approve_held", [held])

    held.refresh_from_db()
    other.refresh_from_db()
    assert (held.status, other.status) == ("PENDING", "PENDING_TM")


def test_compliance_rejects_a_held_payment_in_admin_and_the_funds_come_back(client, sandbox, account):
    before = type(account).objects.get(id=account.id).balance
    (held,) = _held_payments(account, 1)
    client.force_login(User.objects.get(email=sandbox["operator"]["email"], program=None))

    _review(client, "reject_held", [held])

    held.refresh_from_db()
    assert held.status == "FAILED"
    assert held.failure_reason == f"Rejected in compliance review by {sandbox['operator']['email']}"
    assert type(account).objects.get(id=account.id).balance == before


def test_a_payment_no_longer_held_is_left_as_it_is(client, sandbox, account):
    (held,) = _held_payments(account, 1)
    client.force_login(User.objects.get(email=sandbox["operator"]["email"], program=None))
    _review(client, "approve_held", [held])

    _review(client, "reject_held", [held])

    held.refresh_from_db()
    assert held.status == "PENDING"


def test_staff_without_the_review_permission_cannot_review(client, sandbox, account):
    (held,) = _held_payments(account, 1)
    viewer = User.objects.create_user(
        "viewer@sandbox.example", "Viewer-Password-42", role="management", is_staff=True
    )
    viewer.user_permissions.add(Permission.objects.get(codename="view_paymentrequest"))
    client.force_login(viewer)

    page = client.get("/admin/payments/paymentrequest/")
    response = client.post(
        "/admin/payments/paymentrequest/",
        {"action": "approve_held", "index": "0", "_selected_action": [str(held.id)]},
    )

    assert page.status_code == 200 and b"approve_held" not in page.content
    assert response.status_code in (200, 302, 403)
    held.refresh_from_db()
    assert held.status == "PENDING_TM"
