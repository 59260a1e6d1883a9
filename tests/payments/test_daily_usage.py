"""The daily outbound limit's usage row: what each account has sent today."""

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from bankapi.models import Account, Program
from payments.models import DailyOutboundUsage, PaymentRequest
from payments.services.settlement import payment_fail
from tests.conftest import requires_postgres
from tests.payments.conftest import payments_url
from tests.payments.factories import funded_account
from tests.payments.test_concurrency import on_own_connection


def pay(api, sandbox, auth, account, amount):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Limit", "beneficiaryId": sandbox["customer"]["beneficiaryId"]},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def used_today(account) -> Decimal | None:
    today = datetime.now(UTC).date()
    return (
        DailyOutboundUsage.objects.filter(account=account, day=today).values_list("total", flat=True).first()
    )


def test_usage_counts_accepted_payments_and_gives_back_failed_ones(api, sandbox, customer_auth):
    account = Account.objects.get(id=sandbox["customer"]["accountId"])
    Program.objects.filter(id=account.program_id).update(
        daily_outbound_limit=Decimal("100.00"), fee_per_payment=1
    )

    first = pay(api, sandbox, customer_auth, account, "60.00")
    second = pay(api, sandbox, customer_auth, account, "30.00")
    refused = pay(api, sandbox, customer_auth, account, "10.01")

    assert (first.status_code, second.status_code) == (200, 200)
    assert (refused.status_code, refused.json()["code"]) == (422, "LIMIT_EXCEEDED")
    assert "already sent today: 90.00" in refused.json()["message"]
    # The fee does not count against the limit.
    assert used_today(account) == Decimal("90.00")

    payment_fail(
        PaymentRequest.objects.get(id=second.json()["data"]["bankTransfer"]["requestId"]), "Returned"
    )

    assert used_today(account) == Decimal("60.00")
    assert pay(api, sandbox, customer_auth, account, "40.00").status_code == 200
    assert used_today(account) == Decimal("100.00")


def test_a_refused_payment_counts_nothing(api, sandbox, customer_auth):
    low = Account.objects.get(id=sandbox["customer"]["lowBalanceAccountId"])

    response = pay(api, sandbox, customer_auth, low, "5.01")

    assert response.json()["code"] == "INSUFFICIENT_FUNDS"
    assert used_today(low) is None


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_payments_fit_the_daily_limit_exactly(transactional_db, sandbox, customer_auth):
    account = funded_account(Account.objects.get(id=sandbox["customer"]["accountId"]).customer, "1000.00")
    Program.objects.filter(id=account.program_id).update(daily_outbound_limit=Decimal("100.00"))

    def send(_):
        response = pay(APIClient(), sandbox, customer_auth, account, "10.00")
        return response.status_code, response.json().get("code")

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda index: on_own_connection(send, index), range(40)))

    assert results.count((200, None)) == 10
    assert results.count((422, "LIMIT_EXCEEDED")) == 30
    assert used_today(account) == Decimal("100.00")
    assert Account.objects.get(id=account.id).balance == Decimal("900.00")
