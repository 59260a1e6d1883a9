"""A payment at or over its customer's policy threshold waits for other users."""

from decimal import Decimal

from approvals.canonical import content_hash
from approvals.models import Approval
from bankapi.models import Account
from events.models import Event
from payments.models import PaymentRequest
from tests.approvals.conftest import PAYEE, approve_totp, pay


def balance(account) -> Decimal:
    return Account.objects.get(id=account.id).balance


def test_under_every_tier_pays_at_once(api, business):
    answer = pay(api, business, "999.99")
    assert answer.status_code == 200, answer.content
    assert not Approval.objects.exists()


def test_over_the_threshold_answers_202_and_moves_nothing(api, business):
    answer = pay(api, business, "1500.00")
    assert answer.status_code == 202, answer.content
    data = answer.json()["data"]
    assert data["status"] == "PENDING_APPROVAL"
    assert data["required"] == 1 and data["approved"] == 0
    assert balance(business.account) == Decimal("100000.00")
    assert not PaymentRequest.objects.filter(account=business.account).exists()
    approval = Approval.objects.get(id=data["approvalId"])
    assert approval.content == {
        "kind": "payment",
        "accountId": str(business.account.id),
        "amount": "1500.00",
        "currency": "GBP",
        "reference": "Invoice 42",
        "payee": {
            "name": PAYEE["name"],
            "accountNumber": "55779911",
            "sortCode": "200000",
            "iban": None,
            "bic": None,
        },
    }
    assert approval.content_hash == content_hash(approval.content)
    assert Event.objects.filter(type="approval.requested", resource_id=str(approval.id)).count() == 1


def test_approved_with_totp_pays_then(api, business):
    held = pay(api, business, "1500.00").json()["data"]
    answer = approve_totp(api, business.approvers[0], held["approvalId"])
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["status"] == "EXECUTED"
    assert data["approved"] == 1
    assert data["approvals"][0]["method"] == "totp" and data["approvals"][0]["passkey"] is None
    request_id = data["result"]["requestId"]
    assert PaymentRequest.objects.get(id=request_id).amount == Decimal("1500.00")
    assert balance(business.account) == Decimal("98500.00")
    read = api.get(f"/v1/approvals/{held['approvalId']}", **business.initiator.access)
    assert read.status_code == 200 and read.json()["data"]["result"] == {"requestId": request_id}
