"""Races against PostgreSQL row locks: real concurrent requests, one connection each."""

import threading
import uuid
from decimal import Decimal

import pytest
from django.db import connection
from rest_framework.test import APIClient

from bankapi.models import Account
from payments.models import PaymentRequest
from tests.conftest import requires_postgres
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account
from tests.support.race import run_at_once, run_on_pool

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


def test_twenty_concurrent_requests_with_one_key_pay_once(
    transactional_db, customer_auth, beneficiary, account
):
    body = {"amount": "10.00", "reference": "Once", "beneficiaryId": str(beneficiary.id)}
    key = str(uuid.uuid4())

    def send(_):
        response = APIClient().post(
            payments_url(account.customer_id, account.id),
            body,
            format="json",
            HTTP_IDEMPOTENCY_KEY=key,
            **customer_auth,
        )
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    results = run_at_once(20, send)

    assert PaymentRequest.objects.count() == 1
    request_id = str(PaymentRequest.objects.get().id)
    originals = [r for r in results if r[0] == 200 and r[2] is None]
    assert len(originals) == 1
    for status, body_, replayed in results:
        assert status in (200, 409), body_
        if status == 200:
            assert body_["data"]["bankTransfer"]["requestId"] == request_id
            assert replayed in (None, "true")
        else:
            assert body_["code"] == "IDEMPOTENCY_KEY_IN_PROGRESS"
    assert Account.objects.get(id=account.id).balance == Decimal("99990.00")


def test_a_hundred_concurrent_payments_from_fifty_pounds_accept_exactly_fifty(
    transactional_db, customer, customer_auth, beneficiary
):
    account = funded_account(customer, "50.00")
    body = {"amount": "1.00", "reference": "Race", "beneficiaryId": str(beneficiary.id)}
    lowest = [Decimal("50.00")]
    watching = threading.Event()

    def watch():
        # The balance, read outside the payers' transactions, never dips below zero.
        while not watching.is_set():
            lowest[0] = min(lowest[0], Account.objects.get(id=account.id).balance)
        connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()

    def send(_):
        response = APIClient().post(
            payments_url(account.customer_id, account.id), body, format="json", **customer_auth
        )
        return response.status_code, response.json().get("code")

    results = run_on_pool(100, send, threads=25)
    watching.set()
    watcher.join()

    assert results.count((200, None)) == 50
    assert results.count((422, "INSUFFICIENT_FUNDS")) == 50
    assert PaymentRequest.objects.filter(account=account).count() == 50
    assert Account.objects.get(id=account.id).balance == Decimal("0.00")
    assert lowest[0] >= 0
