"""The daily outbound limit's count on the account row: what each account has sent today."""

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from bankapi.models import Account, Program
from payments.models import PaymentRequest
from payments.services.settlement import payment_fail
from tests.conftest import requires_postgres
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account
from tests.support.race import run_on_pool


def pay(api, beneficiary, auth, account, amount):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Limit", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def used_today(account) -> Decimal | None:
    row = Account.objects.get(id=account.id)
    return row.outbound_total if row.outbound_day == datetime.now(UTC).date() else None


def test_usage_counts_accepted_payments_and_gives_back_failed_ones(api, customer_auth, account, beneficiary):
    Program.objects.filter(id=account.program_id).update(
        daily_outbound_limit=Decimal("100.00"), fee_per_payment=1
    )

    first = pay(api, beneficiary, customer_auth, account, "60.00")
    second = pay(api, beneficiary, customer_auth, account, "30.00")
    refused = pay(api, beneficiary, customer_auth, account, "10.01")

    assert (first.status_code, second.status_code) == (200, 200)
    assert (refused.status_code, refused.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert "already sent today: 90.00" in refused.json()["message"]
    # The fee does not count against the limit.
    assert used_today(account) == Decimal("90.00")

    payment_fail(
        PaymentRequest.objects.get(id=second.json()["data"]["bankTransfer"]["requestId"]), "Returned"
    )

    assert used_today(account) == Decimal("60.00")
    assert pay(api, beneficiary, customer_auth, account, "40.00").status_code == 200
    assert used_today(account) == Decimal("100.00")


def test_a_new_day_starts_the_count_again(api, customer_auth, account, beneficiary):
    Program.objects.filter(id=account.program_id).update(daily_outbound_limit=Decimal("100.00"))
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    # Yesterday's limit used up: it does not count today.
    Account.objects.filter(id=account.id).update(outbound_day=yesterday, outbound_total=Decimal("100.00"))

    response = pay(api, beneficiary, customer_auth, account, "70.00")

    assert response.status_code == 200
    assert used_today(account) == Decimal("70.00")
    refused = pay(api, beneficiary, customer_auth, account, "30.01")
    assert (refused.status_code, refused.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert "already sent today: 70.00" in refused.json()["message"]


def test_a_payment_of_an_earlier_day_failing_gives_nothing_back_today(
    api, customer_auth, account, beneficiary
):
    first = pay(api, beneficiary, customer_auth, account, "25.00")
    request = PaymentRequest.objects.get(id=first.json()["data"]["bankTransfer"]["requestId"])
    PaymentRequest.objects.filter(id=request.id).update(created_at=request.created_at - timedelta(days=1))
    assert pay(api, beneficiary, customer_auth, account, "10.00").status_code == 200
    before = Account.objects.get(id=account.id).balance

    payment_fail(PaymentRequest.objects.get(id=request.id), "Returned")

    # Its money comes back; today's count keeps only today's payments.
    assert used_today(account) == Decimal("35.00")
    assert Account.objects.get(id=account.id).balance == before + Decimal("25.00") + request.fee


def test_saving_an_account_loaded_earlier_keeps_its_balance_and_count(
    api, customer_auth, account, beneficiary
):
    stale = Account.objects.get(id=account.id)
    assert pay(api, beneficiary, customer_auth, account, "12.00").status_code == 200
    fresh = Account.objects.get(id=account.id)

    stale.name = "Renamed"
    stale.save()

    saved = Account.objects.get(id=account.id)
    assert saved.name == "Renamed"
    assert (saved.balance, saved.outbound_day, saved.outbound_total) == (
        fresh.balance,
        fresh.outbound_day,
        fresh.outbound_total,
    )


def test_a_refused_payment_counts_nothing(api, customer_auth, low_account, beneficiary):
    low = low_account

    response = pay(api, beneficiary, customer_auth, low, "5.01")

    assert response.json()["code"] == "INSUFFICIENT_FUNDS"
    assert used_today(low) is None


def test_over_the_daily_limit_and_short_of_funds_answers_the_limit_first(
    api, customer_auth, low_account, beneficiary
):
    low = low_account
    Program.objects.filter(id=low.program_id).update(daily_outbound_limit=Decimal("5.00"))
    before = Account.objects.get(id=low.id).balance

    response = pay(api, beneficiary, customer_auth, low, "5.01")

    assert (response.status_code, response.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert Account.objects.get(id=low.id).balance == before
    assert used_today(low) is None


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_payments_fit_the_daily_limit_exactly(
    transactional_db, customer, customer_auth, beneficiary
):
    account = funded_account(customer, "1000.00")
    Program.objects.filter(id=account.program_id).update(daily_outbound_limit=Decimal("100.00"))

    def send(_):
        response = pay(APIClient(), beneficiary, customer_auth, account, "10.00")
        return response.status_code, response.json().get("code")

    results = run_on_pool(40, send, threads=20)

    assert results.count((200, None)) == 10
    assert results.count((422, "LIMIT_EXCEEDED")) == 30
    assert used_today(account) == Decimal("100.00")
    assert Account.objects.get(id=account.id).balance == Decimal("900.00")
