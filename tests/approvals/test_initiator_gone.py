"""A held request runs only while its initiator is still an active user of the
customer or custodian whose policy held it: deactivated (or moved out) in the
meantime, the approve that completes the count answers 200 with FAILED and
UNAUTHORIZED, and nothing moves. The approve route is the one door that runs a
held request (the back office lists approvals read-only; no task runs one)."""

from datetime import timedelta
from decimal import Decimal

import pytest

from approvals.models import Approval
from authn.models import User
from bankapi.models import Account, Customer
from batches.models import Batch
from events.models import Event
from payments.models import PaymentRequest, ScheduledPayment
from payments.services.schedules import utc_today
from tests.approvals.conftest import approve_totp, business_make, pay
from tests.approvals.test_batch_approvals import api as batch_api  # noqa: F401  (fixture)
from tests.approvals.test_batch_approvals import custodian_make, submit
from tests.batches.conftest import balance, payment

pytestmark = pytest.mark.django_db


def assert_failed_unauthorized(answer, approval_id: str) -> None:
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["status"] == "FAILED", data
    assert data["error"]["code"] == "UNAUTHORIZED"
    assert data["result"] is None
    assert Approval.objects.get(id=approval_id).status == Approval.Status.FAILED
    assert Event.objects.filter(type="approval.failed", resource_id=approval_id).count() == 1
    assert not Event.objects.filter(type="approval.executed", resource_id=approval_id).exists()


def test_a_payment_whose_initiator_was_deactivated_fails_and_pays_nothing(api):
    business = business_make(balance="50000.00", tiers=[{"minAmount": "20000.00", "approvers": 1}])
    held = pay(api, business, "20000.00")
    assert held.status_code == 202, held.content
    approval_id = held.json()["data"]["approvalId"]
    User.objects.filter(id=business.initiator.user.id).update(is_active=False)

    answer = approve_totp(api, business.approvers[0], approval_id)

    assert_failed_unauthorized(answer, approval_id)
    assert Account.objects.get(id=business.account.id).balance == Decimal("50000.00")
    assert not PaymentRequest.objects.filter(account=business.account).exists()


def test_the_same_payment_with_its_initiator_active_is_executed(api):
    business = business_make(balance="50000.00", tiers=[{"minAmount": "20000.00", "approvers": 1}])
    approval_id = pay(api, business, "20000.00").json()["data"]["approvalId"]

    answer = approve_totp(api, business.approvers[0], approval_id)

    assert answer.json()["data"]["status"] == "EXECUTED", answer.content
    assert Account.objects.get(id=business.account.id).balance < Decimal("30000.01")


def test_an_initiator_moved_to_another_customer_fails_the_same_way(api):
    business = business_make()
    approval_id = pay(api, business, "1500.00").json()["data"]["approvalId"]
    elsewhere = Customer.objects.create(program=business.program, sandbox=True, name="Elsewhere Ltd")
    User.objects.filter(id=business.initiator.user.id).update(customer=elsewhere)

    answer = approve_totp(api, business.approvers[0], approval_id)

    assert_failed_unauthorized(answer, approval_id)
    assert Account.objects.get(id=business.account.id).balance == Decimal("100000.00")


def test_a_held_schedule_whose_initiator_was_deactivated_is_never_made(api):
    business = business_make()
    later = (utc_today() + timedelta(days=10)).isoformat()
    held = pay(api, business, "1500.00", scheduledDate=later, frequency="MONTHLY")
    assert held.status_code == 202, held.content
    approval_id = held.json()["data"]["approvalId"]
    User.objects.filter(id=business.initiator.user.id).update(is_active=False)

    answer = approve_totp(api, business.approvers[0], approval_id)

    assert_failed_unauthorized(answer, approval_id)
    assert not ScheduledPayment.objects.exists()


def test_a_batch_whose_initiator_was_deactivated_fails_and_pays_nothing(batch_api, program):  # noqa: F811
    setup, approver = custodian_make(program)
    first, second = setup.accounts
    answer = submit(
        batch_api, setup.person.access, setup.user, [payment(first, "600.00"), payment(second, "500.00")]
    )
    assert answer.status_code == 202, answer.content
    approval_id = answer.json()["data"]["approvalId"]
    User.objects.filter(id=setup.user.id).update(is_active=False)

    done = approve_totp(batch_api, approver, approval_id)

    assert_failed_unauthorized(done, approval_id)
    assert not Batch.objects.exists()
    assert balance(first.id) == Decimal("100000.00") and balance(second.id) == Decimal("100000.00")
