"""Batch submits (JSON and file drafts, custodian and single-customer routes) wait
for approval when a currency's total reaches a tier; the batch is made once approved."""

from decimal import Decimal

import pytest

from approvals.models import Approval, ApprovalPolicy
from bankapi.roles import Role
from batches.models import Batch, Draft
from bench.pain001 import Instruction, Tx, pain001, scan
from tests.approvals.conftest import PAYEE, approve_totp, business_make
from tests.batches.conftest import URL, CommittingClient, balance, payment
from tests.batches.iso20022 import upload
from tests.batches.test_submit import totp
from tests.support.factories import SignedIn, UserFactory, custodian_with_clients

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(django_capture_on_commit_callbacks):
    client = CommittingClient()
    client.capture = django_capture_on_commit_callbacks
    return client


def custodian_make(program, balance: str = "100000.00"):
    setup = custodian_with_clients(program, clients=2, balance=balance)
    ApprovalPolicy.objects.create(
        program=program,
        sandbox=True,
        custodian=setup.custodian,
        tiers=[{"minAmount": "1000.00", "approvers": 1}],
        passkey_required=False,
    )
    approver = SignedIn(
        UserFactory(program_id=program.id, role=Role.CUSTODIAN, custodian=setup.custodian, with_totp=True)
    )
    return setup, approver


@pytest.fixture
def custodian(program):
    return custodian_make(program)


def submit(api, auth, user, payments=None, url=URL, **extra):
    body = {"action": "initiate", **({"payments": payments} if payments is not None else {}), **extra}
    initiated = api.post(url, body, format="json", **auth)
    assert initiated.status_code == 200, initiated.content
    body = {
        **body,
        "action": "submit",
        "scaChallenge": initiated.json()["data"]["scaChallenge"],
        "confirmation": totp(user),
    }
    return api.post(url, body, format="json", **auth)


def test_a_custodian_batch_over_the_threshold_waits_then_pays(api, custodian):
    setup, approver = custodian
    first, second = setup.accounts
    payments = [payment(first, "600.00"), payment(second, "500.00"), payment(first, "0")]
    answer = submit(api, setup.person.access, setup.user, payments)
    assert answer.status_code == 202, answer.content
    approval_id = answer.json()["data"]["approvalId"]
    assert not Batch.objects.exists()
    assert balance(first.id) == Decimal("100000.00")
    approval = Approval.objects.get(id=approval_id)
    assert approval.custodian_id == setup.custodian.id and approval.customer_id is None
    assert [item["amount"] for item in approval.content["items"]] == ["600.00", "500.00", "0"]
    assert approval.content["items"][0]["accountId"] == str(first.id)
    assert approval.content["items"][0]["payee"]["sortCode"] == "200000"

    assert approve_totp(api, setup.person, approval_id).status_code == 403
    done = approve_totp(api, approver, approval_id)
    assert done.status_code == 200, done.content
    data = done.json()["data"]
    assert data["status"] == "EXECUTED", data
    batch = Batch.objects.get(id=data["result"]["batchId"])
    assert (batch.payments_count, batch.valid_count) == (3, 2)
    assert batch.submitted_by_id == setup.user.id
    assert balance(first.id) == Decimal("99400.00") and balance(second.id) == Decimal("99500.00")


def test_under_the_threshold_a_batch_is_made_at_once(api, custodian):
    setup, _ = custodian
    answer = submit(api, setup.person.access, setup.user, [payment(setup.accounts[0], "999.99")])
    assert answer.status_code == 200, answer.content
    assert not Approval.objects.exists()


def test_a_file_draft_held_leaves_the_drafts_list_and_becomes_the_batch(api, custodian):
    setup, approver = custodian
    first = setup.accounts[0]
    document = pain001(
        [
            Instruction(
                debtor=scan(first.sort_code, first.account_number),
                execution_date="2026-11-27",
                transactions=[Tx("E2E-A", "1200.00", scan("200000", "55779911"), remittance=["Invoice 9"])],
            )
        ],
        msg_id="APPROVAL-FILE-1",
    )
    uploaded = upload(api, setup.person.access, document)
    assert uploaded.status_code == 200, uploaded.content
    draft_id = uploaded.json()["requestId"]
    answer = submit(api, setup.person.access, setup.user, batchId=draft_id)
    assert answer.status_code == 202, answer.content
    drafts = api.get(f"{URL}?drafts=true", **setup.person.access).json()["data"]
    assert draft_id not in str(drafts)
    done = approve_totp(api, approver, answer.json()["data"]["approvalId"])
    assert done.json()["data"]["status"] == "EXECUTED", done.content
    assert done.json()["data"]["result"] == {"batchId": draft_id}
    assert balance(first.id) == Decimal("98800.00")
    assert Draft.objects.get(id=draft_id).submitted_at is not None


def test_the_single_customer_route_takes_the_customers_policy(api, db):
    business = business_make()
    business.account.sort_code, business.account.account_number = "040004", "31415926"
    business.account.save()
    url = f"/v1/customers/{business.customer.id}/batch-payments"
    answer = submit(
        api,
        business.initiator.access,
        business.initiator.user,
        [payment(business.account, "1000.00")],
        url=url,
    )
    assert answer.status_code == 202, answer.content
    approval = Approval.objects.get(id=answer.json()["data"]["approvalId"])
    assert approval.customer_id == business.customer.id and approval.kind == "batch"
    done = approve_totp(api, business.approvers[0], str(approval.id))
    assert done.json()["data"]["status"] == "EXECUTED", done.content


def test_a_payer_whose_funds_went_fails_its_item_at_execution(api, program):
    setup, approver = custodian_make(program, balance="2000.00")
    first = setup.accounts[0]
    answer = submit(api, setup.person.access, setup.user, [payment(first, "1500.00")])
    approval_id = answer.json()["data"]["approvalId"]
    paid = api.post(
        f"/v1/customers/{first.customer_id}/accounts/{first.id}/payments",
        {"amount": "900.00", "currency": "GBP", "reference": "Rent", "payee": PAYEE},
        format="json",
        **setup.person.access,
    )
    assert paid.status_code == 200, paid.content
    done = approve_totp(api, approver, approval_id)
    assert done.json()["data"]["status"] == "EXECUTED"
    batch = Batch.objects.get(id=done.json()["data"]["result"]["batchId"])
    assert batch.status == Batch.Status.FUNDING_FAILED
    assert balance(first.id) == Decimal("1100.00")


def test_a_held_submits_idempotency_key_replays_its_202(api, custodian):
    setup, _ = custodian
    key = "0b7c6f0e-8d3a-4c52-9a61-3f1d2e4b5a69"
    payments = [payment(setup.accounts[0], "1500.00")]
    first = submit(api, setup.person.access, setup.user, payments, idempotencyKey=key)
    assert first.status_code == 202, first.content
    again = api.post(
        URL,
        {
            "action": "submit",
            "payments": payments,
            "idempotencyKey": key,
            "scaChallenge": {},
            "confirmation": {},
        },
        format="json",
        **setup.person.access,
    )
    assert again.status_code == 202 and again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert Approval.objects.count() == 1


def test_a_custodian_clients_payment_takes_the_custodians_policy(api, custodian):
    setup, approver = custodian
    account = setup.accounts[0]
    held = api.post(
        f"/v1/customers/{account.customer_id}/accounts/{account.id}/payments",
        {"amount": "1000.00", "currency": "GBP", "reference": "Rent", "payee": PAYEE},
        format="json",
        **setup.person.access,
    )
    assert held.status_code == 202, held.content
    approval = Approval.objects.get(id=held.json()["data"]["approvalId"])
    assert approval.custodian_id == setup.custodian.id and approval.customer_id is None
    assert approve_totp(api, approver, str(approval.id)).json()["data"]["status"] == "EXECUTED"
    assert balance(account.id) == Decimal("99000.00")
