"""A clock customer's objects share the clock's time, so its lists order them,
newest first, by the order they were written: payment requests, schedules and
booked transactions alike, across pages too."""

from datetime import timedelta

import pytest

from approvals.models import ApprovalPolicy
from authn.models import User
from bankapi.models import Account, Customer
from tests.batches.conftest import payment, verify
from tests.batches.helpers import batch_submitted
from tests.sandbox.helpers import account_url, as_customer, clock_make, customer_make, midnight

PAYEE = {"name": "Landlord", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "12345678"}}
MADE = 6


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


@pytest.fixture
def world(api, sandbox, program):
    clock = clock_make(api, sandbox, program, midnight(-100) + timedelta(hours=9))
    made = customer_make(api, sandbox, program, clock["testClockId"])
    return made, as_customer(made, program)


def listed(api, url: str, key: str, customer: dict[str, str], id_key: str, limit: int = 4) -> list[str]:
    """Every item's id, page after page of `limit`."""
    ids: list[str] = []
    token = None
    while True:
        joiner = "" if url.endswith(("?", "&")) else "?"
        page_url = f"{url}{joiner}limit={limit}" + (f"&nextToken={token}" if token else "")
        answer = api.get(page_url, **customer)
        assert answer.status_code == 200, answer.content
        data = answer.json()["data"]
        ids += [item[id_key] for item in data[key]]
        token = data["nextToken"]
        if token is None:
            return ids


def pay(api, made, customer, number: int, **body) -> dict:
    answer = api.post(
        f"{account_url(made)}/payments",
        {"amount": f"{number}.00", "currency": "GBP", "reference": f"Rent {number}", "payee": PAYEE, **body},
        format="json",
        **customer,
    )
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]


def test_payment_requests_of_one_clock_moment_list_newest_written_first(api, world):
    made, customer = world
    written = [pay(api, made, customer, n)["bankTransfer"]["requestId"] for n in range(1, MADE + 1)]
    got = listed(api, f"{account_url(made)}/payment-requests", "paymentRequests", customer, "requestId")
    assert got == written[::-1]


def test_schedules_of_one_clock_moment_list_newest_written_first(api, world):
    made, customer = world
    later = (midnight(-100) + timedelta(days=30)).date().isoformat()
    written = [
        pay(api, made, customer, n, scheduledDate=later)["bankTransfer"]["scheduleId"]
        for n in range(1, MADE + 1)
    ]
    got = listed(api, f"{account_url(made)}/scheduled-payments", "scheduledPayments", customer, "scheduleId")
    assert got == written[::-1]


def test_transactions_of_one_clock_moment_list_newest_booked_first(api, world):
    made, customer = world
    requests = [pay(api, made, customer, n)["bankTransfer"]["requestId"] for n in range(1, MADE + 1)]
    for request_id in requests:
        settled = api.post(f"/v1/sandbox/payment-requests/{request_id}/settle", format="json", **customer)
        assert settled.status_code == 200, settled.content
    answer = api.get(f"{account_url(made)}/transactions?limit=100", **customer)
    transactions = answer.json()["data"]["transactions"]
    # the settled payments, last settled first, then the opening funding
    assert [t["amount"] for t in transactions] == [f"{n}.00" for n in range(MADE, 0, -1)] + ["100000.00"]


def test_approvals_of_one_clock_moment_list_newest_written_first(api, sandbox):
    program = sandbox["businessProgramId"]
    clock = clock_make(api, sandbox, program, midnight(-100) + timedelta(hours=9))
    made = customer_make(api, sandbox, program, clock["testClockId"])
    customer = as_customer(made, program)
    owner = Customer.objects.get(id=made["customerId"])
    ApprovalPolicy.objects.create(
        program_id=owner.program_id,
        sandbox=True,
        customer=owner,
        tiers=[{"minAmount": "1.00", "approvers": 1}],
        expires_after_hours=24,
        passkey_required=False,
    )
    written = []
    for n in range(1, MADE + 1):
        held = api.post(
            f"{account_url(made)}/payments",
            {"amount": f"{n}.00", "currency": "GBP", "reference": f"Rent {n}", "payee": PAYEE},
            format="json",
            **customer,
        )
        assert held.status_code == 202, held.content
        written.append(held.json()["data"]["approvalId"])
    assert listed(api, "/v1/approvals", "approvals", customer, "approvalId") == written[::-1]


def test_drafts_and_batches_of_one_clock_moment_list_newest_written_first(api, world):
    made, customer = world
    account = Account.objects.get(id=made["accountId"])
    drafts = [
        verify(api, customer, [payment(account, amount=f"{n}.00", reference=f"Invoice {n}")])
        for n in range(1, MADE + 1)
    ]
    got = listed(api, "/v1/batch-payments?drafts=true&", "paymentsBatches", customer, "id")
    assert got == drafts[::-1]
    user = User.objects.get(email=made["email"])
    batches = [str(batch_submitted(user, [payment(account, f"{n}.00")]).id) for n in range(1, MADE + 1)]
    got = listed(api, "/v1/batch-payments?", "paymentsBatches", customer, "id")
    assert got == batches[::-1]
