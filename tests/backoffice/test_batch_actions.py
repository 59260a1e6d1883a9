"""Operations retry a failed batch item from the admin; the batch's own
processing pays it, once, and the batch's status follows."""

import uuid
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry

from authn.models import User
from bankapi.models import Account, Customer, Program
from batches.models import Batch, BatchItem
from batches.services.processing import batch_process
from payments.ledger import ledger_fund_account
from payments.models import LedgerPosting
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.support.factories import CustodianSetup, custodian_with_clients, funded_account

URL = "/admin/batches/batchitem/"


@pytest.fixture
def custodian(program) -> CustodianSetup:
    """A custodian of the program whose clients' GBP accounts hold 100,000.00 each."""
    return custodian_with_clients(program)


@pytest.fixture
def custodian_user(custodian) -> User:
    return custodian.user


@pytest.fixture
def short_batch(custodian, custodian_user):
    """A finished batch: one item paid, one whose payer could not fund it, one
    invalid at submit."""
    rich = custodian.accounts[0]
    customer = Customer.objects.create(
        program_id=rich.program_id, name="Short Client", custodian_id=custodian_user.custodian_id
    )
    poor = funded_account(customer, "5.00", sort_code="300000", account_number="12345678")
    batch = batch_submitted(
        custodian_user,
        [payment(rich, "10.00"), payment(poor, "50.00"), payment(rich, "0")],
    )
    batch_process(str(batch.id))
    batch.refresh_from_db()
    paid, short, invalid = batch.items.order_by("index")
    assert (batch.status, paid.status, short.status, invalid.status) == (
        "PARTIALLY_FAILED",
        "SUCCESS",
        "FAILED",
        "FAILED",
    )
    return batch, poor, short, invalid


def _retry(client, items):
    return client.post(URL, {"action": "retry", "index": "0", "_selected_action": [str(i.id) for i in items]})


def test_operations_retry_a_failed_item_once_its_payer_has_funds(
    staff_client, short_batch, django_capture_on_commit_callbacks
):
    batch, poor, short, _ = short_batch
    ledger_fund_account(poor, Decimal("100.00"), key=f"test:{uuid.uuid4()}")
    client = staff_client("operations")

    with django_capture_on_commit_callbacks(execute=True):
        response = _retry(client, [short])

    assert response.status_code == 302
    short.refresh_from_db()
    assert short.status == "SUCCESS" and short.payment is not None
    assert (short.payment.amount, short.payment.account_id) == (Decimal("50.00"), poor.id)
    assert Account.objects.get(id=poor.id).balance == Decimal("55.00")
    # Paid from a hold of its own, placed by the retry and released at the item's
    # booking: the payer's ledger shows its two credits and this one debit, nothing held.
    assert short.hold.released_at is not None and Account.objects.get(id=poor.id).held == 0
    amounts = LedgerPosting.objects.filter(account=poor).order_by("id").values_list("amount", flat=True)
    assert list(amounts) == [
        Decimal("5.00"),
        Decimal("100.00"),
        Decimal("-50.00"),
    ]
    # Still one item failed (the invalid one): the batch ends PARTIALLY_FAILED again.
    assert Batch.objects.get(id=batch.id).status == "PARTIALLY_FAILED"
    assert LogEntry.objects.filter(object_id=str(short.id), change_message__startswith="Retried").exists()


def test_a_retry_holds_what_the_payment_needs_its_fee_included(
    staff_client, short_batch, django_capture_on_commit_callbacks
):
    """The retry's hold is what the decision finds the payment needs (amount
    and fee), as the batch's funding holds; the payment then spends exactly it."""
    _, poor, short, _ = short_batch
    Program.objects.filter(id=poor.program_id).update(fee_per_payment=Decimal("0.75"))
    ledger_fund_account(poor, Decimal("100.00"), key=f"test:{uuid.uuid4()}")
    client = staff_client("operations")

    with django_capture_on_commit_callbacks(execute=False) as queued:
        _retry(client, [short])
    short.refresh_from_db()
    held = (short.status, short.hold.amount, Account.objects.get(id=poor.id).held)
    for callback in queued:
        callback()

    assert held == ("QUEUED", Decimal("50.75"), Decimal("50.75"))
    short.refresh_from_db()
    assert short.status == "SUCCESS"
    assert (Account.objects.get(id=poor.id).balance, Account.objects.get(id=poor.id).held) == (
        Decimal("54.25"),
        Decimal("0.00"),
    )


def test_a_retry_the_payer_still_cannot_fund_leaves_the_item_failed(
    staff_client, short_batch, django_capture_on_commit_callbacks
):
    batch, poor, short, _ = short_batch
    client = staff_client("operations")

    with django_capture_on_commit_callbacks(execute=True):
        _retry(client, [short])

    short.refresh_from_db()
    assert short.status == "FAILED" and short.payment is None
    assert short.error.startswith("INSUFFICIENT_FUNDS")
    assert Account.objects.get(id=poor.id).balance == Decimal("5.00")
    assert Batch.objects.get(id=batch.id).status == "PARTIALLY_FAILED"


def test_items_invalid_at_submit_or_already_paid_are_not_retried(
    staff_client, short_batch, django_capture_on_commit_callbacks
):
    batch, _, _, invalid = short_batch
    paid = batch.items.get(index=0)
    client = staff_client("operations")

    with django_capture_on_commit_callbacks(execute=True):
        response = _retry(client, [invalid, paid])

    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("amount" in m and "Left unchanged" in m for m in messages)
    assert any("SUCCESS item cannot be retried" in m for m in messages)
    invalid.refresh_from_db()
    assert invalid.status == "FAILED" and invalid.payment is None
    assert BatchItem.objects.filter(batch=batch, payment__isnull=False).count() == 1


def test_support_and_compliance_cannot_retry(staff_client, short_batch, django_capture_on_commit_callbacks):
    batch, poor, short, _ = short_batch
    ledger_fund_account(poor, Decimal("100.00"), key=f"test:{uuid.uuid4()}")
    for group in ("support", "compliance"):
        client = staff_client(group)
        page = client.get(URL)
        with django_capture_on_commit_callbacks(execute=True):
            _retry(client, [short])
        assert page.status_code == 200 and b'value="retry"' not in page.content
        client.logout()

    short.refresh_from_db()
    assert short.status == "FAILED" and short.payment is None


def test_the_dashboard_counts_failed_batch_items(staff_client, short_batch):
    client = staff_client("operations")

    body = client.get("/admin/").content.decode()

    assert "Failed batch items: 2" in body
    assert "/admin/batches/batchitem/?status__exact=FAILED" in body


def test_an_item_refused_for_a_limit_is_retried_by_the_same_decision(
    staff_client, custodian, custodian_user, django_capture_on_commit_callbacks
):
    """Refused at acceptance for the per-payment limit: a retry while the limit
    still refuses it moves nothing and keeps the limit's reason; once the limit
    allows it, the retry pays it, once."""
    payer = custodian.accounts[0]
    program = Program.objects.get(id=payer.program_id)
    Program.objects.filter(id=program.id).update(per_payment_limit=Decimal("40.00"))
    batch = batch_submitted(custodian_user, [payment(payer, "10.00"), payment(payer, "50.00")])
    batch_process(str(batch.id))
    over = batch.items.get(index=1)
    assert (over.status, over.failure_code) == ("FAILED", "LIMIT_EXCEEDED")
    before = Account.objects.get(id=payer.id).balance
    client = staff_client("operations")

    with django_capture_on_commit_callbacks(execute=True):
        _retry(client, [over])

    over.refresh_from_db()
    assert (over.status, over.failure_code, over.payment_id) == ("FAILED", "LIMIT_EXCEEDED", None)
    assert over.error.startswith("LIMIT_EXCEEDED: The amount is above the per-payment limit of 40.00")
    assert Account.objects.get(id=payer.id).balance == before

    Program.objects.filter(id=program.id).update(per_payment_limit=Decimal("100.00"))
    with django_capture_on_commit_callbacks(execute=True):
        _retry(client, [over])
        _retry(client, [over])

    over.refresh_from_db()
    assert over.status == "SUCCESS" and over.payment is not None
    assert Account.objects.get(id=payer.id).balance == before - Decimal("50.00")
    assert Batch.objects.get(id=batch.id).status == "COMPLETED"
