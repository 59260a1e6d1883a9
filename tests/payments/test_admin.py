"""Operators see payment requests and schedules in admin, read-only."""

from datetime import date
from decimal import Decimal

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
