"""A payer account's reference rules are one rule: a single payment and a batch
item from the same account accept and refuse the same references, in the same
words. Batches once demanded a character where the account allowed none, and
took a reference longer than any payment carries from an account whose own
maximum was higher."""

import uuid

import pytest

from bankapi.models import Account
from batches.rules import PayerBook, item_check
from batches.sent import SentAccount, SentPayee, SentPayer, SentPayment
from payments.formats import REFERENCE_MAX
from payments.rules import account_reference_error
from tests.batches.conftest import PAYEE_UK
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account, uk_account

ANY, SWIFT = Account.ReferenceCharset.ANY, Account.ReferenceCharset.SWIFT

# (reference_min, reference_max, charset, reference, refused)
CASES = [
    (0, 140, ANY, "", False),
    (1, 140, ANY, "", True),
    (1, 140, ANY, "x", False),
    (1, 140, ANY, "x" * 140, False),
    (1, 140, ANY, "x" * 141, True),
    (3, 35, ANY, "ab", True),
    (3, 35, ANY, "abc", False),
    (3, 35, ANY, "x" * 36, True),
    (1, 140, ANY, "bad\nline", True),
    (1, 140, ANY, "trailing newline\n", True),
    (1, 140, SWIFT, "Rent & bills", True),
    (1, 140, SWIFT, "INV-2026/11 (paid)", False),
    # An account's own maximum above what a payment carries: the payment's wins.
    (1, 200, ANY, "x" * 140, False),
    (1, 200, ANY, "x" * 141, True),
]


def _account(reference_min: int, reference_max: int, charset: str) -> Account:
    return Account(
        currency="GBP",
        sort_code="040004",
        account_number="12345678",
        reference_min=reference_min,
        reference_max=reference_max,
        reference_charset=charset,
    )


def _batch_item(account: Account, reference: str) -> SentPayment:
    return SentPayment(
        payer=SentPayer(
            account=SentAccount(kind="uk", sort_code=account.sort_code, account_number=account.account_number)
        ),
        payee=SentPayee(
            name="Jane Payee", account=SentAccount(kind="uk", sort_code="200000", account_number="55779911")
        ),
        reference=reference,
        amount="10.00",
    )


@pytest.mark.parametrize(("low", "high", "charset", "reference", "refused"), CASES)
def test_a_batch_item_and_a_payment_meet_one_reference_rule(low, high, charset, reference, refused):
    account = _account(low, high, charset)

    single = account_reference_error(account, reference)
    checked = item_check(0, _batch_item(account, reference), PayerBook.of([account]))

    assert (single is not None) == refused
    assert checked.reasons == ([f"reference: {single}"] if refused else [])


@pytest.mark.django_db
def test_an_account_allowing_more_than_a_payment_carries_is_held_to_it_on_every_path(
    api, customer, customer_auth
):
    """The payment route refuses a reference over REFERENCE_MAX whatever the
    account allows; a batch item from that account is invalid for it too
    (it was valid, and its statement line cut the reference short)."""
    account = funded_account(customer.customer, "100.00", **uk_account())
    account.reference_max = 200
    account.save()
    reference = "x" * (REFERENCE_MAX + 1)

    single = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "1.00", "reference": reference, "payee": PAYEE_UK},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **customer_auth,
    )
    checked = item_check(0, _batch_item(account, reference), PayerBook.of([account]))

    assert single.status_code == 400, single.json()
    assert single.json()["code"] == "VALIDATION_ERROR" and "reference" in str(single.json())
    assert checked.reasons == [f"reference: Must be 1 to {REFERENCE_MAX} characters for this account."]
