"""Returns: a settled payment the payee's bank sends back, recorded by the
sandbox route or an operator, through one service."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from authn.models import User
from bankapi.backoffice import OPERATIONS
from bankapi.models import Program
from events.models import Event
from payments.models import PaymentRequest
from payments.services.limits import account_limits
from tests.payments.conftest import balance, payments_url
from tests.payments.test_international_transfers import position, quote, transfer
from tests.payments.test_settlement import accept, settle_url, system_total


def _settled(api, auth, account, amount: str = "25.00") -> PaymentRequest:
    request = accept(account, amount, reference="Invoice 77")
    assert api.post(settle_url(request), **auth).status_code == 200
    return request


def test_a_return_credits_the_amount_and_shows_everywhere(api, customer_auth, account):
    program = Program.objects.get(id=account.program_id)
    program.fee_per_payment = Decimal("0.50")
    program.save()
    request = _settled(api, customer_auth, account)
    external = system_total(account, "EXTERNAL")
    used = account_limits(program=program, account=account, now=request.created_at).daily_used

    response = api.post(settle_url(request, "return"), {"reasonCode": "AC04"}, format="json", **customer_auth)

    assert response.status_code == 200
    assert response.json()["data"]["paymentRequest"]["status"] == "RETURNED"
    # The amount comes back, the fee does not; the day's used limit stays.
    assert balance(account) == Decimal("100000.00") - Decimal("0.50")
    assert system_total(account, "EXTERNAL") == external - Decimal("25.00")
    assert account_limits(program=program, account=account, now=request.created_at).daily_used == used
    listed = api.get(payments_url(account.customer_id, account.id, "payment-requests"), **customer_auth)
    assert listed.json()["data"]["paymentRequests"] == []
    transactions = api.get(payments_url(account.customer_id, account.id, "transactions"), **customer_auth)
    newest = transactions.json()["data"]["transactions"][0]
    assert (newest["direction"], newest["amount"], newest["returnOf"]) == ("CREDIT", "25.00", str(request.id))
    assert all(t["returnOf"] is None for t in transactions.json()["data"]["transactions"][1:])
    event = Event.objects.filter(resource_id=request.id).order_by("-created_at").first()
    assert event.type == "payment_request.returned" and event.data["status"] == "RETURNED"
    day = str(request.created_at.date())
    statement = api.get(
        payments_url(account.customer_id, account.id, "statements"), {"from": day, "to": day}, **customer_auth
    ).json()["data"]
    debit, credit = (e for e in statement["entries"] if e["requestId"] == str(request.id))
    assert (credit["creditDebit"], credit["amount"], credit["returnReason"]) == ("CRDT", "25.00", "AC04")
    assert credit["endToEndId"] == debit["endToEndId"] == request.id.hex
    assert credit["description"] == "Payment returned: AC04" and debit["returnReason"] is None


def test_only_a_settled_request_returns_and_only_once(api, customer_auth, account):
    pending = accept(account, "5.00")
    settled = _settled(api, customer_auth, account)
    first = api.post(settle_url(settled, "return"), {"reasonCode": "MS03"}, format="json", **customer_auth)
    before = balance(account)

    again = api.post(settle_url(settled, "return"), {"reasonCode": "MS03"}, format="json", **customer_auth)
    early = api.post(settle_url(pending, "return"), {"reasonCode": "MS03"}, format="json", **customer_auth)

    assert first.status_code == 200
    assert again.status_code == early.status_code == 409
    assert again.json()["code"] == early.json()["code"] == "INVALID_STATE"
    assert balance(account) == before
    assert PaymentRequest.objects.get(id=pending.id).status == "PENDING"


@pytest.mark.parametrize("body", [{"reasonCode": "XX99"}, {"reasonCode": "ac04"}, {}, {"reasonCode": 4}])
def test_an_unknown_reason_code_is_400_and_changes_nothing(api, customer_auth, account, body):
    request = _settled(api, customer_auth, account)
    before = balance(account)

    response = api.post(settle_url(request, "return"), body, format="json", **customer_auth)

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert "reasonCode" in str(response.json())
    assert PaymentRequest.objects.get(id=request.id).status == "SETTLED" and balance(account) == before


def test_another_tenants_request_is_404(api, customer_auth, customer2_auth, account):
    request = _settled(api, customer_auth, account)

    response = api.post(
        settle_url(request, "return"), {"reasonCode": "AC04"}, format="json", **customer2_auth
    )
    anonymous = api.post(settle_url(request, "return"), {"reasonCode": "AC04"}, format="json")

    assert response.status_code == 404
    assert anonymous.status_code == 401
    assert PaymentRequest.objects.get(id=request.id).status == "SETTLED"


def test_an_operator_records_a_return_with_its_reason_code(api, client, customer_auth, account):
    request = _settled(api, customer_auth, account)
    operator = User.objects.create_user(
        "ops@backoffice.example", "Operator-Password-4242", role="management", is_staff=True
    )
    operator.groups.add(Group.objects.get_or_create(name=OPERATIONS)[0])
    client.force_login(operator)
    url = "/admin/payments/paymentrequest/"
    chosen = {"action": "record_return", "index": "0", "_selected_action": [str(request.id)]}

    page = client.post(url, chosen)
    refused = client.post(url, {**chosen, "post": "yes", "reason": "XX99"})
    after_refusal = PaymentRequest.objects.get(id=request.id).status
    done = client.post(url, {**chosen, "post": "yes", "reason": "AC06"})

    assert page.status_code == 200 and b"AC06" in page.content
    assert refused.status_code == 200 and after_refusal == "SETTLED"
    assert done.status_code == 302
    assert PaymentRequest.objects.get(id=request.id).status == "RETURNED"
    assert PaymentRequest.objects.get(id=request.id).return_movement.memo == "AC06"


def _movement(entry) -> list[tuple[str, Decimal, str]]:
    """A movement's postings as (holder, amount, currency): ACCOUNT or the kind of system account."""
    postings = entry.postings.select_related("system_account")
    return sorted(
        (p.system_account.kind if p.system_account else "ACCOUNT", p.amount, p.currency) for p in postings
    )


@pytest.mark.usefixtures("fx_rates")
@pytest.mark.parametrize("fee", ["0.00", "0.50"])
def test_a_converted_payment_returns_through_the_fx_position_and_keeps_its_fee(
    api, customer_auth, account, beneficiary, fee
):
    """A return undoes the payment's acceptance as a reversal does, from its
    postings, but for the fee: the payer gets back what left the account for
    the payment, in its own currency, the payee's amount comes back from
    outside in the payment's, and the FX position is where it was before."""
    Program.objects.filter(id=account.program_id).update(fee_per_payment=Decimal(fee))
    given = quote(api, customer_auth, account, "100.00")
    sent = transfer(api, customer_auth, account, beneficiary, given["quoteId"])
    assert sent.status_code == 200, sent.json()
    request = PaymentRequest.objects.get(id=sent.json()["data"]["internationalTransfer"]["requestId"])
    assert api.post(settle_url(request), **customer_auth).status_code == 200

    response = api.post(settle_url(request, "return"), {"reasonCode": "AC04"}, format="json", **customer_auth)

    assert response.status_code == 200
    returned = PaymentRequest.objects.get(id=request.id)
    paid, sold = request.amount, request.debit_amount
    assert _movement(returned.return_movement) == sorted(
        [("ACCOUNT", sold, "GBP"), ("EXTERNAL", -paid, "EUR"), ("FX", paid, "EUR"), ("FX", -sold, "GBP")]
    )
    assert balance(account) == Decimal("100000.00") - Decimal(fee)
    assert position(account, "FX", "GBP") == position(account, "FX", "EUR") == 0
    assert position(account, "EXTERNAL", "EUR") == 0
    assert position(account, "FEES", "GBP") == Decimal(fee)
