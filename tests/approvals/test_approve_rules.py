"""Who may approve, in which order the checks run, and what each refusal leaves."""

from decimal import Decimal

import pytest

from approvals.models import Approval, ApprovalSignature
from authn.models import LoginThrottle
from bankapi.models import Account
from events.models import Event
from payments.models import PaymentRequest
from tests.approvals.conftest import approve_totp, business_make, code_of, pay
from tests.support.factories import customer_user
from tests.support.single_line import LINE_BREAKING, with_inside


@pytest.fixture
def held(api, business) -> str:
    answer = pay(api, business, "1500.00")
    assert answer.status_code == 202, answer.content
    return answer.json()["data"]["approvalId"]


def test_the_initiator_cannot_approve_its_own(api, business, held):
    answer = approve_totp(api, business.initiator, held)
    assert answer.status_code == 403
    assert answer.json()["code"] == "FORBIDDEN"
    assert not ApprovalSignature.objects.exists()


def test_another_customer_and_another_tenant_get_404(api, business, held):
    other_business = business_make()
    stranger = customer_user(business.program)
    for person in (other_business.approvers[0], stranger):
        for path in ("", "/approve", "/reject", "/challenge"):
            body = {"confirmation": {"method": "totp", "code": code_of(person)}} if path == "/approve" else {}
            if path == "/reject":
                body = {"reason": "no"}
            method = api.get if path == "" else api.post
            answer = method(f"/v1/approvals/{held}{path}", body, format="json", **person.access)
            assert answer.status_code == 404, (path, answer.content)
            assert answer.json()["code"] == "RESOURCE_NOT_FOUND"
    assert Approval.objects.get(id=held).status == "PENDING_APPROVAL"


def test_a_malformed_id_is_404(api, business):
    answer = api.get("/v1/approvals/not-an-id", **business.approvers[0].access)
    assert answer.status_code == 404


def test_a_replayed_approve_is_409(api, business):
    business.policy.tiers = [{"minAmount": "1000.00", "approvers": 2}]
    business.policy.save()
    held = pay(api, business, "1500.00").json()["data"]["approvalId"]
    first = approve_totp(api, business.approvers[0], held)
    assert first.status_code == 200 and first.json()["data"]["status"] == "PENDING_APPROVAL"
    assert first.json()["data"]["approved"] == 1
    again = approve_totp(api, business.approvers[0], held)
    assert again.status_code == 409
    assert again.json()["code"] == "INVALID_STATE"
    assert Event.objects.filter(type="approval.approved", resource_id=held).count() == 1
    done = approve_totp(api, business.approvers[1], held)
    assert done.json()["data"]["status"] == "EXECUTED"
    after = approve_totp(api, business.approvers[2], held)
    assert after.status_code == 409
    assert PaymentRequest.objects.filter(account=business.account).count() == 1


def test_two_approvers_above_the_higher_tier(api, business):
    answer = pay(api, business, "5000.00")
    assert answer.json()["data"]["required"] == 2


def test_totp_where_a_passkey_is_required_is_422_and_counts_nothing(api, business, held):
    Approval.objects.filter(id=held).update(passkey_required=True)
    answer = approve_totp(api, business.approvers[0], held)
    assert answer.status_code == 422
    assert answer.json()["code"] == "NOT_SUPPORTED"


def test_a_pin_never_approves(api, business, held):
    body = {"confirmation": {"method": "pin", "pin": "123456"}}
    answer = api.post(f"/v1/approvals/{held}/approve", body, format="json", **business.approvers[0].access)
    assert answer.status_code == 422


def test_a_wrong_code_is_401_and_counts_toward_the_lockout(api, business, held):
    approver = business.approvers[0]
    for _ in range(5):
        answer = approve_totp(api, approver, held, code="000000")
        assert answer.status_code == 401
        assert answer.json()["code"] == "INVALID_CREDENTIALS"
    locked = approve_totp(api, approver, held)
    assert locked.status_code == 429
    assert locked.has_header("Retry-After")
    assert Approval.objects.get(id=held).status == "PENDING_APPROVAL"
    assert LoginThrottle.objects.exists()


def test_reject_ends_it_and_nothing_moves(api, business, held):
    answer = api.post(
        f"/v1/approvals/{held}/reject",
        {"reason": "Wrong supplier"},
        format="json",
        **business.initiator.access,
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["status"] == "REJECTED"
    assert approve_totp(api, business.approvers[0], held).status_code == 409
    assert Account.objects.get(id=business.account.id).balance == Decimal("100000.00")
    assert Event.objects.filter(type="approval.rejected", resource_id=held).count() == 1


@pytest.mark.parametrize(
    "body", [{}, {"reason": ""}, {"reason": 5}, {"reason": "a\nb"}, {"reason": "x", "y": 1}]
)
def test_reject_takes_one_line_of_reason(api, business, held, body):
    answer = api.post(f"/v1/approvals/{held}/reject", body, format="json", **business.initiator.access)
    assert answer.status_code == 400
    assert answer.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
def test_reject_reason_is_single_line_text(api, business, held, character):
    """Bidi overrides and isolates, zero-width characters, line and paragraph
    separators and the byte order mark were taken, and shown to the initiator."""
    answer = api.post(
        f"/v1/approvals/{held}/reject",
        {"reason": with_inside("Wrong supplier", character)},
        format="json",
        **business.initiator.access,
    )

    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert (body["code"], [error["field"] for error in body["errors"]]) == ("VALIDATION_ERROR", ["reason"])
    assert "single line of text" in body["errors"][0]["message"]
    assert Approval.objects.get(id=held).status == "PENDING_APPROVAL"


def test_a_reason_of_spaces_alone_is_blank(api, business, held):
    answer = api.post(
        f"/v1/approvals/{held}/reject", {"reason": "   "}, format="json", **business.initiator.access
    )

    assert answer.status_code == 400, answer.content
    assert Approval.objects.get(id=held).status == "PENDING_APPROVAL"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"confirmation": {"method": "totp"}},
        {"confirmation": {"method": "sms", "code": "1"}},
        {"confirmation": 1},
    ],
)
def test_approve_body_rules(api, business, held, body):
    answer = api.post(f"/v1/approvals/{held}/approve", body, format="json", **business.approvers[0].access)
    assert answer.status_code == 400


def test_funds_gone_while_waiting_fail_at_execution_and_pay_nothing(api, db):
    business = business_make(balance="2000.00")
    held = pay(api, business, "1500.00").json()["data"]["approvalId"]
    assert pay(api, business, "900.00").status_code == 200
    answer = approve_totp(api, business.approvers[0], held)
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["status"] == "FAILED"
    assert data["error"]["code"] == "INSUFFICIENT_FUNDS"
    assert data["result"] is None
    assert Account.objects.get(id=business.account.id).balance == Decimal("1100.00")
    assert PaymentRequest.objects.filter(account=business.account).count() == 1
    assert Event.objects.filter(type="approval.failed", resource_id=held).count() == 1


def test_a_beneficiary_deleted_while_waiting_fails_at_execution(api, business):
    from tests.support.factories import BeneficiaryFactory

    beneficiary = BeneficiaryFactory(customer=business.customer)
    body = {"amount": "1500.00", "currency": "GBP", "reference": "Rent", "beneficiaryId": str(beneficiary.id)}
    held = api.post(business.payments_url, body, format="json", **business.initiator.access)
    assert held.status_code == 202, held.content
    beneficiary.delete()
    answer = approve_totp(api, business.approvers[0], held.json()["data"]["approvalId"])
    assert answer.json()["data"]["status"] == "FAILED"
    assert answer.json()["data"]["error"]["code"] == "RESOURCE_NOT_FOUND"
    assert not PaymentRequest.objects.filter(account=business.account).exists()


def test_over_the_limit_when_run_fails_with_limit_exceeded(api, business):
    held = pay(api, business, "1500.00").json()["data"]["approvalId"]
    business.program.per_payment_limit = Decimal("1000.00")
    business.program.save()
    answer = approve_totp(api, business.approvers[0], held)
    assert answer.json()["data"]["error"]["code"] == "LIMIT_EXCEEDED"
    assert not PaymentRequest.objects.filter(account=business.account).exists()
