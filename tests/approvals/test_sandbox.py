"""The sandbox bootstrap gives the business customer and the custodian a policy
(one tier from 20,000.00, one approver, 168 hours, TOTP allowed) and a second
user of each who approves."""

import io
import json
from decimal import Decimal

import pyotp
from django.core.management import call_command

from approvals.models import ApprovalPolicy
from authn.models import User
from bankapi.models import Account
from tests.support.auth import access_header

PAYEE = {"name": "Big Supplier", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "12345678"}}
POLICY = {
    "tiers": [{"minAmount": "20000.00", "approvers": 1}],
    "expiresAfterHours": 168,
    "passkeyRequired": False,
}


def run_bootstrap() -> dict:
    out = io.StringIO()
    call_command("bootstrap_sandbox", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_approvers_and_policies_are_the_contracts(api, sandbox):
    business, custodian = sandbox["business"], sandbox["custodian"]
    approver = sandbox["businessApprover"]
    assert approver["programId"] == sandbox["businessProgramId"]
    assert sandbox["custodianApprover"]["programId"] == custodian["programId"]
    user = User.objects.get(email=approver["email"], program_id=approver["programId"])
    assert str(user.customer_id) == business["customerId"] and user.check_password(approver["password"])
    other = User.objects.get(email=sandbox["custodianApprover"]["email"], program_id=custodian["programId"])
    first = User.objects.get(email=custodian["email"], program_id=custodian["programId"])
    assert other.role == "custodian" and other.custodian_id == first.custodian_id and other.id != first.id
    for person, program in ((approver, approver["programId"]), (custodian, custodian["programId"])):
        answer = api.get("/v1/approval-policy", **access_header(person["email"], program))
        assert answer.status_code == 200 and answer.json()["data"] == POLICY


def test_a_business_payment_over_the_threshold_is_approved_by_the_second_user(api, sandbox):
    business, approver = sandbox["business"], sandbox["businessApprover"]
    program = sandbox["businessProgramId"]
    url = f"/v1/customers/{business['customerId']}/accounts/{business['accountId']}/payments"
    body = {"amount": "20000.00", "currency": "GBP", "reference": "Machinery", "payee": PAYEE}
    held = api.post(url, body, format="json", **access_header(business["email"], program))
    assert held.status_code == 202, held.content
    approval_id = held.json()["data"]["approvalId"]
    code = pyotp.TOTP(approver["totpSecret"]).now()
    done = api.post(
        f"/v1/approvals/{approval_id}/approve",
        {"confirmation": {"method": "totp", "code": code}},
        format="json",
        **access_header(approver["email"], program),
    )
    assert done.status_code == 200, done.content
    assert done.json()["data"]["status"] == "EXECUTED"
    assert Account.objects.get(id=business["accountId"]).balance == Decimal("80000.00")


def test_a_rerun_makes_no_second_policy_or_approver(sandbox):
    first = run_bootstrap()
    counts = (ApprovalPolicy.objects.count(), User.objects.count())
    assert run_bootstrap() == first
    assert (ApprovalPolicy.objects.count(), User.objects.count()) == counts


def test_the_same_walk_through_with_a_passkey(api, sandbox):
    from tests.support.passkeys import enrol_passkey

    business, approver = sandbox["business"], sandbox["businessApprover"]
    program = sandbox["businessProgramId"]
    authenticator = enrol_passkey(api, approver["email"], program)
    url = f"/v1/customers/{business['customerId']}/accounts/{business['accountId']}/payments"
    body = {"amount": "21000.00", "currency": "GBP", "reference": "Machinery", "payee": PAYEE}
    held = api.post(url, body, format="json", **access_header(business["email"], program))
    approval_id = held.json()["data"]["approvalId"]
    headers = access_header(approver["email"], program)
    opened = api.post(f"/v1/approvals/{approval_id}/challenge", **headers).json()["data"]
    confirmation = {
        "method": "passkey",
        "passkeySession": opened["passkeySession"],
        "assertion": authenticator.get(opened["fido2options"]),
    }
    done = api.post(
        f"/v1/approvals/{approval_id}/approve", {"confirmation": confirmation}, format="json", **headers
    )
    assert done.status_code == 200, done.content
    data = done.json()["data"]
    assert data["status"] == "EXECUTED" and data["approvals"][0]["method"] == "passkey"
    read = api.get(f"/v1/approvals/{approval_id}", **access_header(business["email"], program)).json()["data"]
    assert read["approvals"][0]["passkey"]["credentialId"] == authenticator.credential_id_b64
    assert Account.objects.get(id=business["accountId"]).balance == Decimal("79000.00")
