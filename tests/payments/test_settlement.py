"""After acceptance: settlement, failure, compliance review, the sandbox routes
that drive them, and the operator commands."""

import io
import uuid
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from bankapi.models import Account, Program
from payments.ledger import system_account_for
from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest, StatementEntry
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import (
    payment_fail,
    payment_review_approve,
    payment_review_reject,
    payment_settle,
)
from payments.tasks import settle_pending_payments
from tests.payments.conftest import balance, payments_url
from tests.support.auth import id_header
from tests.support.factories import funded_account


def accept(account: Account, amount: str = "10.00", reference: str = "Invoice 9") -> PaymentRequest:
    return payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=Decimal(amount), currency=account.currency, reference=reference
        ),
    )


def system_total(account: Account, kind: str) -> Decimal:
    system = system_account_for(account.program_id, account.sandbox, kind, account.currency)
    return sum((p.amount for p in LedgerPosting.objects.filter(system_account=system)), Decimal("0"))


def settle_url(request: PaymentRequest, action: str = "settle") -> str:
    return f"/v1/sandbox/payment-requests/{request.id}/{action}"


def test_settling_moves_the_payment_from_the_requests_list_to_the_transactions(api, customer_auth, account):
    program = Program.objects.get(id=account.program_id)
    program.fee_per_payment = Decimal("0.50")
    program.save()
    request = accept(account, "25.00")
    clearing, external = (system_total(account, kind) for kind in ("CLEARING", "EXTERNAL"))

    response = api.post(settle_url(request), **customer_auth)

    assert response.status_code == 200
    assert response.json()["data"]["paymentRequest"]["status"] == "SETTLED"
    assert system_total(account, "CLEARING") == clearing - Decimal("25.00")
    assert system_total(account, "EXTERNAL") == external + Decimal("25.00")
    assert balance(account) == Decimal("99974.50")
    listed = api.get(payments_url(account.customer_id, account.id, "payment-requests"), **customer_auth)
    assert listed.json()["data"]["paymentRequests"] == []
    booked = api.get(payments_url(account.customer_id, account.id, "transactions"), **customer_auth)
    lines = [
        (t["direction"], t["amount"], t["reference"], t["requestId"])
        for t in booked.json()["data"]["transactions"]
    ]
    assert sorted(lines[:2]) == sorted(
        [("DEBIT", "25.00", "Invoice 9", str(request.id)), ("DEBIT", "0.50", "Payment fee", str(request.id))]
    )
    assert lines[2] == ("CREDIT", "100000.00", "Funding", None)


def test_the_statement_adds_up_to_the_balance_once_everything_settled(customer, beneficiary):
    account = funded_account(customer, "100.00")
    for amount in ("10.00", "20.00", "30.00"):
        payment_settle(accept(account, amount))
    payment_fail(accept(account, "5.00"), "Returned by the beneficiary bank")

    entries = StatementEntry.objects.filter(account=account)
    total = sum(e.amount if e.direction == "CREDIT" else -e.amount for e in entries)

    assert total == balance(account) == Decimal("40.00")


def test_failing_a_payment_returns_amount_and_fee_and_keeps_it_listed_as_failed(api, customer_auth, account):
    Program.objects.filter(id=account.program_id).update(fee_per_payment=Decimal("1.25"))
    request = accept(account, "40.00")
    assert balance(account) == Decimal("99958.75")
    clearing = system_total(account, "CLEARING")

    response = api.post(
        settle_url(request, "fail"), {"reason": "Beneficiary account closed"}, format="json", **customer_auth
    )

    assert response.status_code == 200
    assert balance(account) == Decimal("100000.00")
    assert system_total(account, "CLEARING") == clearing - Decimal("40.00")
    assert system_total(account, "FEES") == Decimal("0.00")
    listed = api.get(payments_url(account.customer_id, account.id, "payment-requests"), **customer_auth)
    entry = listed.json()["data"]["paymentRequests"][0]
    assert (entry["requestId"], entry["status"], entry["failureReason"]) == (
        str(request.id),
        "FAILED",
        "Beneficiary account closed",
    )
    assert not StatementEntry.objects.filter(payment_request=request).exists()


def test_fail_without_a_reason_uses_a_default(api, customer_auth, account):
    request = accept(account)

    response = api.post(settle_url(request, "fail"), **customer_auth)

    assert response.status_code == 200
    assert response.json()["data"]["paymentRequest"]["failureReason"] == "Failed in the sandbox"


def test_a_request_in_the_wrong_state_answers_409_invalid_state(api, customer_auth, account, snapshot):
    settled = payment_settle(accept(account))
    failed = payment_fail(accept(account), "Rejected")
    held = accept(account, "10000.00")
    before = snapshot()

    responses = [
        api.post(settle_url(settled), **customer_auth),
        api.post(settle_url(settled, "fail"), **customer_auth),
        api.post(settle_url(failed), **customer_auth),
        api.post(settle_url(failed, "fail"), **customer_auth),
        api.post(settle_url(held), **customer_auth),
    ]

    assert [r.status_code for r in responses] == [409] * 5
    assert {r.json()["code"] for r in responses} == {"INVALID_STATE"}
    assert before.unchanged()


@pytest.mark.parametrize("body", [{"reason": ""}, {"reason": 12}, {"reason": "x" * 201}, {"sandbox": True}])
def test_a_bad_fail_body_is_a_400_and_changes_nothing(api, customer_auth, account, snapshot, body):
    request = accept(account)
    before = snapshot()

    response = api.post(settle_url(request, "fail"), body, format="json", **customer_auth)

    assert response.status_code == 400
    assert before.unchanged()
    assert PaymentRequest.objects.get(id=request.id).status == "PENDING"


def test_production_tokens_do_not_see_the_sandbox_routes(api, production_auth):
    auth, live_account = production_auth
    request = accept(live_account)

    responses = [api.post(settle_url(request), **auth), api.post(settle_url(request, "fail"), **auth)]

    assert [r.status_code for r in responses] == [404, 404]
    assert PaymentRequest.objects.get(id=request.id).status == "PENDING"


def test_outsiders_cannot_settle_or_fail_a_request(api, customer2_auth, business_auth, account):
    request = accept(account)

    responses = [
        api.post(settle_url(request), **customer2_auth),
        api.post(settle_url(request, "fail"), **business_auth),
        api.post(f"/v1/sandbox/payment-requests/{uuid.uuid4()}/settle", **customer2_auth),
        api.post("/v1/sandbox/payment-requests/not-an-id/settle", **customer2_auth),
    ]

    assert [r.status_code for r in responses] == [404] * 4
    assert PaymentRequest.objects.get(id=request.id).status == "PENDING"


def test_the_sandbox_routes_need_the_access_token(api, account, payer, program):
    request = accept(account)
    id_token = id_header(payer.email, payer.program_id)

    responses = [api.post(settle_url(request)), api.post(settle_url(request, "fail"), **id_token)]

    assert [r.status_code for r in responses] == [401, 401]


def test_compliance_approval_releases_a_held_payment_for_settlement(account):
    held = accept(account, "15000.00")
    assert held.status == "PENDING_TM"

    approved = payment_review_approve(held)
    settled = payment_settle(approved)

    assert (approved.status, settled.status) == ("PENDING", "SETTLED")


def test_compliance_rejection_fails_the_payment_and_returns_the_funds(account):
    held = accept(account, "15000.00")

    rejected = payment_review_reject(held, "Sanctions screening match")

    assert (rejected.status, rejected.failure_reason) == ("FAILED", "Sanctions screening match")
    assert balance(account) == Decimal("100000.00")


@pytest.mark.parametrize("review", [payment_review_approve, lambda r: payment_review_reject(r, "No")])
def test_only_held_payments_can_be_reviewed(account, review):
    from bankapi.errors import ApiError

    pending = accept(account)

    with pytest.raises(ApiError) as refused:
        review(pending)

    assert refused.value.code == "INVALID_STATE"
    assert PaymentRequest.objects.get(id=pending.id).status == "PENDING"


def test_settle_payments_command_settles_every_pending_request_once(account):
    pending = [accept(account) for _ in range(3)]
    held = accept(account, "12000.00")

    first, second = io.StringIO(), io.StringIO()
    call_command("settle_payments", stdout=first)
    call_command("settle_payments", stdout=second)

    assert "Settled 3" in first.getvalue() and "Settled 0" in second.getvalue()
    assert {r.status for r in PaymentRequest.objects.filter(id__in=[p.id for p in pending])} == {"SETTLED"}
    assert PaymentRequest.objects.get(id=held.id).status == "PENDING_TM"
    assert LedgerTransaction.objects.filter(kind="SETTLEMENT").count() == 3


def test_the_settlement_beat_task_settles_production_requests_only(account, production_auth):
    _, live_account = production_auth
    sandbox_request = accept(account)
    live_request = accept(live_account)

    settled = settle_pending_payments.delay().get()

    assert settled == 1
    assert PaymentRequest.objects.get(id=live_request.id).status == "SETTLED"
    assert PaymentRequest.objects.get(id=sandbox_request.id).status == "PENDING"
    entry = settings.CELERY_BEAT_SCHEDULE["settle-pending-payments"]
    assert entry["task"] == "payments.tasks.settle_pending_payments"


def test_a_settlement_posting_is_keyed_so_it_cannot_happen_twice(account):
    request = payment_settle(accept(account))
    PaymentRequest.objects.filter(id=request.id).update(status="PENDING")

    payment_settle(request)

    assert LedgerTransaction.objects.filter(key=f"settle:{request.id}").count() == 1
    assert StatementEntry.objects.filter(payment_request=request).count() == 1


def test_check_ledger_reports_a_healthy_ledger(db):
    out = io.StringIO()

    call_command("check_ledger", stdout=out)

    assert "Ledger OK" in out.getvalue()


def test_check_ledger_fails_when_a_balance_does_not_match_its_postings(account):
    Account.objects.filter(id=account.id).update(balance=Decimal("1.00"))
    err = io.StringIO()

    with pytest.raises(CommandError):
        call_command("check_ledger", stderr=err)

    assert str(account.id) in err.getvalue()
    Account.objects.filter(id=account.id).update(balance=Decimal("100000.00"))
