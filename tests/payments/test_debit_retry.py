"""Money that arrives between a refused debit and the lock that reads why it was
refused: the payment is then accepted, once, against the money now there."""

import uuid
from decimal import Decimal

from django.db import connection

from bankapi.models import Account, Program
from payments.ledger import ledger_fund_account
from payments.models import PaymentRequest
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account


def _pay(api, beneficiary, auth, account, amount: str):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": amount, "reference": "Arrived", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def test_money_arriving_after_the_refused_debit_pays_once(api, customer_auth, beneficiary, customer):
    Program.objects.filter(id=customer.program_id).update(fee_per_payment=Decimal("1.00"))
    short, control = funded_account(customer, "5.00"), funded_account(customer, "5.00")
    table, seen = Account._meta.db_table, []

    def money_arrives_before_the_lock(execute, sql, params, many, context):
        # The debit (an UPDATE of the row) is refused and changes nothing; the
        # next read of the row (the lock, FOR UPDATE where the database has it) is
        # where a credit committed meanwhile shows.
        about_short = table in sql and short.id.hex in str(params).replace("-", "")
        if about_short and sql.lstrip().upper().startswith("UPDATE") and not seen:
            seen.append("debit")
        elif about_short and sql.lstrip().upper().startswith("SELECT") and seen == ["debit"]:
            seen.append("credit")
            ledger_fund_account(short, Decimal("100.00"), key=f"arrived:{uuid.uuid4()}")
        return execute(sql, params, many, context)

    refused = _pay(api, beneficiary, customer_auth, control, "20.00")
    with connection.execute_wrapper(money_arrives_before_the_lock):
        accepted = _pay(api, beneficiary, customer_auth, short, "20.00")

    assert (refused.status_code, refused.json()["code"]) == (422, "INSUFFICIENT_FUNDS")
    assert seen == ["debit", "credit"], "the refused debit was not followed by a read of the row"
    assert accepted.status_code == 200, accepted.content
    request_id = accepted.json()["data"]["bankTransfer"]["requestId"]
    assert PaymentRequest.objects.filter(account=short).count() == 1
    assert PaymentRequest.objects.get(id=request_id).debit_amount == Decimal("20.00")
    assert Account.objects.get(id=short.id).balance == Decimal("84.00")  # 5 + 100 - 20 - 1 fee
    assert Account.objects.get(id=control.id).balance == Decimal("5.00")
