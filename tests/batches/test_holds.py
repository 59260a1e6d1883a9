"""Holds are not bookings: a batch's funding sets each item's amount and fee
aside on its payer account, which lowers what the account may spend (its
available balance) and nothing else; each item is then paid from its own hold
as one debit, and a refused item's hold is released without a line."""

import threading
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone
from lxml import etree
from rest_framework.test import APIClient

from bankapi.models import Account, Program
from batches.models import Batch
from batches.services.processing import batch_fund, batch_process
from payments.ledger import ledger_check
from payments.models import Hold, LedgerPosting
from tests.batches.conftest import PAYEE_UK, payment
from tests.batches.helpers import batch_submitted
from tests.batches.test_processing import custodian_payer
from tests.conftest import requires_postgres
from tests.support.race import run_at_once

CAMT = {"c": "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"}


def _account_url(account: Account) -> str:
    return f"/v1/customers/{account.customer_id}/accounts/{account.id}"


def _balances(api, auth, account: Account, **query) -> tuple[str, str]:
    response = api.get(f"{_account_url(account)}/balances", query, **auth)
    assert response.status_code == 200, response.json()
    return response.json()["data"]["balance"], response.json()["data"]["available"]


def _statement(api, auth, account: Account) -> list[dict]:
    day = str(datetime.now(UTC).date())
    response = api.get(f"{_account_url(account)}/statements", {"from": day, "to": day}, **auth)
    assert response.status_code == 200, response.json()
    return response.json()["data"]["entries"]


def _camt053_balances(api, auth, account: Account) -> dict[str, str]:
    day = str(datetime.now(UTC).date())
    response = api.get(
        f"{_account_url(account)}/statements", {"from": day, "to": day, "format": "camt053"}, **auth
    )
    assert response.status_code == 200, response.content
    document = etree.fromstring(response.content)
    return {
        balance.findtext("c:Tp/c:CdOrPrtry/c:Cd", namespaces=CAMT): balance.findtext("c:Amt", namespaces=CAMT)
        for balance in document.iterfind(".//c:Stmt/c:Bal", CAMT)
    }


def _pay(api, auth, account: Account, amount: str):
    return api.post(
        f"{_account_url(account)}/payments",
        {"amount": amount, "reference": "Rent", "payee": PAYEE_UK},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


@pytest.mark.django_db
def test_funding_holds_the_items_money_and_each_item_is_paid_from_its_own_hold(
    api, custodian_user, custodian, custodian_auth
):
    Program.objects.filter(id=custodian_user.program_id).update(fee_per_payment=Decimal("0.50"))
    payer = custodian_payer(custodian, "1000.00")
    batch = batch_submitted(custodian_user, [payment(payer, "300.00"), payment(payer, "200.00")])
    booked_before = _statement(api, custodian_auth, payer)

    # When the batch is funded: each item's amount and fee is held.
    batch_fund(str(batch.id))
    funded_at = timezone.now()

    # Then the balance, the statement and camt.053's CLBD are unchanged; what
    # may be spent is the balance less the holds.
    assert Batch.objects.get(id=batch.id).status == "FUNDED"
    assert _balances(api, custodian_auth, payer) == ("1000.00", "499.00")
    capabilities = api.get("/v1/capabilities", **custodian_auth).json()["data"]
    [shown] = [a for a in capabilities["accounts"] if a["accountId"] == str(payer.id)]
    assert (shown["balance"], shown["availableBalance"]) == ("1000.00", "499.00")
    assert _statement(api, custodian_auth, payer) == booked_before
    assert _camt053_balances(api, custodian_auth, payer) == {
        "OPBD": "0.00",
        "CLBD": "1000.00",
        "CLAV": "499.00",
    }
    # A payment needing more than is available is refused, though the balance covers it.
    refused = _pay(api, custodian_auth, payer, "499.00")
    assert refused.status_code == 422, refused.json()
    assert refused.json()["code"] == "INSUFFICIENT_FUNDS"
    assert "499.00 GBP available (1000.00 less 501.00 held)" in refused.json()["message"]
    # One needing exactly what is available is paid.
    assert _pay(api, custodian_auth, payer, "498.50").status_code == 200
    assert _balances(api, custodian_auth, payer) == ("501.00", "0.00")

    # When the batch is processed: each item is paid by its own hold.
    batch_process(str(batch.id))

    assert Batch.objects.get(id=batch.id).status == "COMPLETED"
    assert _balances(api, custodian_auth, payer) == ("0.00", "0.00")
    # Bookings only: the funding, the single payment, then one debit per item.
    entries = _statement(api, custodian_auth, payer)
    assert [(e["creditDebit"], e["amount"], e["balanceAfter"]) for e in entries] == [
        ("CRDT", "1000.00", "1000.00"),
        ("DBIT", "499.00", "501.00"),
        ("DBIT", "300.50", "200.50"),
        ("DBIT", "200.50", "0.00"),
    ]
    items = list(batch.items.order_by("index"))
    assert [e["endToEndId"] for e in entries[2:]] == [item.id.hex for item in items]
    assert [e["requestId"] for e in entries[2:]] == [str(item.payment_id) for item in items]
    # The past is told as it was: while the batch was funded, 501.00 was held.
    assert _balances(api, custodian_auth, payer, asOf=funded_at.isoformat().replace("+00:00", "Z")) == (
        "1000.00",
        "499.00",
    )
    assert not Hold.objects.filter(account=payer, released_at__isnull=True).exists()
    assert ledger_check().ok


@pytest.mark.django_db
def test_an_item_refused_at_acceptance_has_its_hold_released_and_nothing_booked(
    api, custodian_user, custodian, custodian_auth
):
    Program.objects.filter(id=custodian_user.program_id).update(per_payment_limit=Decimal("100.00"))
    payer = custodian_payer(custodian, "1000.00")
    batch = batch_submitted(custodian_user, [payment(payer, "40.00"), payment(payer, "150.00")])

    batch_fund(str(batch.id))
    assert _balances(api, custodian_auth, payer) == ("1000.00", "810.00")
    batch_process(str(batch.id))

    paid, refused = batch.items.order_by("index")
    assert (paid.status, refused.status, refused.failure_code) == ("SUCCESS", "FAILED", "LIMIT_EXCEEDED")
    assert refused.hold.released_at is not None and refused.payment_id is None
    assert _balances(api, custodian_auth, payer) == ("960.00", "960.00")
    assert LedgerPosting.objects.filter(account=payer).count() == 2  # the funding, the paid item
    assert ledger_check().ok


@pytest.mark.django_db
def test_the_ledger_check_finds_a_held_amount_its_holds_do_not_explain(custodian_user, custodian):
    payer = custodian_payer(custodian, "1000.00")
    batch = batch_submitted(custodian_user, [payment(payer, "40.00")])
    batch_fund(str(batch.id))
    assert ledger_check().ok

    Account.objects.filter(id=payer.id).update(held=Decimal("50.00"))
    report = ledger_check()

    assert not report.ok
    assert report.mismatched_holds == {str(payer.id): (Decimal("50.00"), Decimal("40.00"))}
    Account.objects.filter(id=payer.id).update(held=Decimal("40.00"))


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_payments_racing_a_batchs_funding_never_spend_what_it_holds(
    custodian_user, custodian, custodian_auth
):
    """Twenty payments of 5.00 race the funding of three 20.00 items on an
    account of 100.00 (PostgreSQL, one connection each). Whoever locks first
    wins, and nothing is spent twice: funded, the items take 60.00 and at most
    eight payments fit in the rest; refused, the payments left less than 60.00."""
    payer = custodian_payer(custodian, "100.00")
    batch = batch_submitted(custodian_user, [payment(payer, "20.00") for _ in range(3)])
    lowest = [Decimal("100.00")]
    watching = threading.Event()

    def watch():
        # What may be spent, read outside the racers' transactions, never dips below zero.
        while not watching.is_set():
            account = Account.objects.get(id=payer.id)
            lowest[0] = min(lowest[0], account.balance - account.held)
        connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()

    def race(index: int):
        if index == 0:
            batch_fund(str(batch.id))
            return "funding"
        return _pay(APIClient(), custodian_auth, payer, "5.00").status_code

    try:
        outcomes = run_at_once(21, race)
    finally:
        watching.set()
        watcher.join()
    batch_process(str(batch.id))

    paid = outcomes.count(200)
    assert set(outcomes[1:]) <= {200, 422}
    batch.refresh_from_db()
    items = list(batch.items.all())
    account = Account.objects.get(id=payer.id)
    if batch.status == "COMPLETED":
        assert paid <= 8 and {item.status for item in items} == {"SUCCESS"}
        assert account.balance == Decimal("100.00") - 5 * paid - Decimal("60.00")
    else:
        assert batch.status == "FUNDING_FAILED" and paid > 8
        assert {item.failure_code for item in items} == {"INSUFFICIENT_FUNDS"}
        assert account.balance == Decimal("100.00") - 5 * paid
    assert account.held == 0 and lowest[0] >= 0
    assert ledger_check().ok
