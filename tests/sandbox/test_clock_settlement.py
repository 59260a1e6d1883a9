"""A clock customer's payment settles at its clock's time, whoever settles it:
the sandbox's settlement run (`manage.py settle_payments`; beat's run settles
production only) or the sandbox settle route. Its `updatedAt`, its statement
line, the ledger's movement and its `payment_request.settled` event all read the
clock, however far the clock is from now."""

from datetime import timedelta

import pytest
from django.core.management import call_command

from payments.ledger import ledger_check
from payments.models import LedgerTransaction, PaymentRequest
from tests.sandbox.helpers import account_url, as_customer, clock_make, customer_make, midnight, z
from tests.sandbox.test_clock_world import pay


@pytest.fixture
def program(sandbox) -> str:
    return sandbox["consumerProgramId"]


def settled_by_run(api, made, program, request_id) -> None:
    call_command("settle_payments", environment="sandbox")


def settled_by_route(api, made, program, request_id) -> None:
    answer = api.post(
        f"/v1/sandbox/payment-requests/{request_id}/settle", format="json", **as_customer(made, program)
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["data"]["paymentRequest"]["status"] == "SETTLED"


@pytest.mark.parametrize("days", [-300, 300], ids=["clock a year behind", "clock a year ahead"])
@pytest.mark.parametrize("settle", [settled_by_run, settled_by_route], ids=["run", "route"])
def test_a_clock_customers_payment_settles_at_its_clocks_time(api, sandbox, program, days, settle):
    frozen = midnight(days) + timedelta(hours=9)
    clock = clock_make(api, sandbox, program, frozen)
    made = customer_make(api, sandbox, program, clock["testClockId"])
    headers = as_customer(made, program)
    paid = pay(api, made, program)
    assert paid.status_code == 200, paid.content
    request_id = paid.json()["data"]["bankTransfer"]["requestId"]
    settle(api, made, program, request_id)

    # A settled payment leaves the payment-requests list: its event shows it as the route does.
    stored = PaymentRequest.objects.get(id=request_id)
    assert stored.settled_at == frozen and stored.updated_at == frozen
    # The movement's postings (clearing -> external) are booked at its time; its row keeps the real one.
    movement = LedgerTransaction.objects.get(key=f"settle:{request_id}")
    assert {posting.created_at for posting in movement.postings.all()} == {frozen}

    listed = api.get(f"{account_url(made)}/transactions", **headers)
    assert listed.headers["Sandbox-Clock"] == z(frozen)
    lines = listed.json()["data"]["transactions"]
    settled_lines = [line for line in lines if line.get("reference") == "Rent"]
    assert settled_lines and {line["bookedAt"].replace("+00:00", "Z") for line in settled_lines} == {
        z(frozen)
    }
    events = api.get("/v1/events?type=payment_request.settled", **headers).json()["data"]["events"]
    assert len(events) == 1
    assert events[0]["createdAt"].replace("+00:00", "Z") == z(frozen)
    assert events[0]["data"]["status"] == "SETTLED"
    assert events[0]["data"]["updatedAt"].replace("+00:00", "Z") == z(frozen)
    assert ledger_check().ok


def test_a_real_customers_payment_settles_at_the_real_time_beside_a_clocks(api, sandbox, program):
    clock = clock_make(api, sandbox, program, midnight(300))
    on_clock = customer_make(api, sandbox, program, clock["testClockId"])
    real = customer_make(api, sandbox, program)
    ids = []
    for made in (on_clock, real):
        paid = pay(api, made, program)
        assert paid.status_code == 200, paid.content
        ids.append(paid.json()["data"]["bankTransfer"]["requestId"])
    call_command("settle_payments", environment="sandbox")
    clocked, now = (PaymentRequest.objects.get(id=request_id) for request_id in ids)
    assert clocked.status == now.status == "SETTLED"
    assert clocked.settled_at == midnight(300)
    assert abs(now.settled_at - now.created_at) < timedelta(minutes=1)
    assert "Sandbox-Clock" not in api.get(f"{account_url(real)}/transactions", **as_customer(real, program))
