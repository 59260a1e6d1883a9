"""Processing: funding per payer account, items paid in chunks, safe to rerun."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import transaction

from bankapi.errors import ApiError
from bankapi.models import Account, Customer, Program
from batches.models import Batch, BatchItem
from batches.services import processing
from batches.services.processing import batch_fund, batch_process
from payments.ledger import ledger_check
from payments.models import Hold, LedgerPosting, PaymentRequest
from payments.payees import IbanAccount, Payee, payee_of
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import payment_fail
from tests.batches.conftest import PAYEE_IBAN, balance, payment
from tests.batches.helpers import batch_submitted
from tests.support.factories import funded_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def payers(custodian_accounts) -> list[Account]:
    return [Account.objects.get(id=entry["accountId"]) for entry in custodian_accounts]


def custodian_payer(custodian, balance_: str) -> Account:
    customer = Customer.objects.create(
        program_id=custodian.program_id, name="Short Client", custodian=custodian
    )
    return funded_account(customer, balance_, sort_code="300000", account_number="12345678")


def test_a_batch_is_funded_and_every_valid_item_paid_once(custodian_user, payers):
    first, second = payers
    before = {p.id: p.balance for p in payers}
    batch = batch_submitted(
        custodian_user,
        [
            payment(first, "10.00"),
            payment(second, "2.50", payee=PAYEE_IBAN),
            payment(first, "1.25"),
            payment(first, "0"),
        ],
    )
    assert batch.status == "CREATED"

    batch_process(str(batch.id), chunk_size=2)

    batch.refresh_from_db()
    assert batch.status == "PARTIALLY_FAILED"
    items = list(batch.items.order_by("index"))
    assert [i.status for i in items] == ["SUCCESS", "SUCCESS", "SUCCESS", "FAILED"]
    assert items[3].payment is None and items[3].error.startswith("amount:")
    assert balance(first.id) == before[first.id] - Decimal("11.25")
    assert balance(second.id) == before[second.id] - Decimal("2.50")
    requests = PaymentRequest.objects.filter(batch_item__batch=batch)
    assert requests.count() == 3
    paid = items[1].payment
    assert (paid.status, paid.amount, paid.account_id, paid.customer_id) == (
        "PENDING",
        Decimal("2.50"),
        second.id,
        second.customer_id,
    )
    assert payee_of(paid.payee) == Payee(
        name="Hans Payee", account=IbanAccount(iban="DE89370400440532013000", bic="COBADEFFXXX")
    )
    # Funding held each valid item and booked nothing; each hold was released at
    # its item's booking: one debit per paid item is all the payers' ledger shows.
    holds = Hold.objects.filter(batch_item__batch=batch)
    assert sorted(hold.amount for hold in holds) == [Decimal("1.25"), Decimal("2.50"), Decimal("10.00")]
    assert not holds.filter(released_at__isnull=True).exists()
    assert {p.id: p.held for p in Account.objects.filter(id__in=[first.id, second.id])} == {
        first.id: 0,
        second.id: 0,
    }
    assert [
        LedgerPosting.objects.filter(account_id=p.id, transaction__created_at__gte=batch.created_at).count()
        for p in payers
    ] == [2, 1]
    assert ledger_check().ok


def test_all_valid_items_paid_is_completed(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00")])
    batch_process(str(batch.id))
    batch.refresh_from_db()
    assert batch.status == "COMPLETED"


def test_running_twice_pays_nothing_twice(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[n % 2], "1.00") for n in range(7)])
    batch_process(str(batch.id), chunk_size=3)
    after_first = {p.id: balance(p.id) for p in payers}

    batch_process(str(batch.id), chunk_size=3)
    Batch.objects.filter(id=batch.id).update(status="FUNDING_PENDING")
    batch_fund(str(batch.id))

    assert {p.id: balance(p.id) for p in payers} == after_first
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 7


def test_a_payer_that_cannot_cover_its_total_fails_its_own_items(custodian_user, custodian, payers):
    short = custodian_payer(custodian, "5.00")
    batch = batch_submitted(
        custodian_user, [payment(short, "3.00"), payment(payers[0], "1.00"), payment(short, "3.00")]
    )
    batch_process(str(batch.id))

    batch.refresh_from_db()
    assert batch.status == "PARTIALLY_FAILED"
    items = list(batch.items.order_by("index"))
    assert [i.status for i in items] == ["FAILED", "SUCCESS", "FAILED"]
    assert items[0].error.startswith("INSUFFICIENT_FUNDS")
    assert balance(short.id) == Decimal("5.00")


def test_funding_failed_when_no_payer_can_cover(custodian_user, custodian):
    short = custodian_payer(custodian, "5.00")
    batch = batch_submitted(custodian_user, [payment(short, "6.00")])
    batch_process(str(batch.id))
    batch.refresh_from_db()
    assert batch.status == "FUNDING_FAILED"
    assert batch.items.get().status == "FAILED"
    assert balance(short.id) == Decimal("5.00")


def test_a_batch_of_invalid_items_only_fails(custodian_user, payers):
    batch = batch_submitted(custodian_user, [payment(payers[0], "abc")])
    batch_process(str(batch.id))
    batch.refresh_from_db()
    assert batch.status == "FAILED"


def test_payments_follow_the_programs_rules(custodian_user, payers):
    program = Program.objects.get(id=custodian_user.program_id)
    program.fee_per_payment = Decimal("0.50")
    program.save()
    start = balance(payers[0].id)
    batch = batch_submitted(
        custodian_user,
        [payment(payers[0], "10000.00"), payment(payers[0], "25000.01"), payment(payers[0], "5.00")],
    )
    batch_process(str(batch.id))

    items = list(batch.items.order_by("index"))
    assert [i.status for i in items] == ["SUCCESS", "FAILED", "SUCCESS"]
    assert items[0].payment.status == "PENDING_TM"
    assert items[1].error.startswith("LIMIT_EXCEEDED")
    assert items[2].payment.fee == Decimal("0.50")
    # The refused item's hold was released: nothing of it was booked.
    assert balance(payers[0].id) == start - Decimal("10005.00") - Decimal("1.00")


def test_a_batch_payment_that_fails_later_returns_the_money_to_its_payer(custodian_user, payers):
    start = balance(payers[0].id)
    batch = batch_submitted(custodian_user, [payment(payers[0], "7.00")])
    batch_process(str(batch.id))
    request = batch.items.get().payment

    payment_fail(request, "Returned by the payee's bank")

    assert balance(payers[0].id) == start
    assert BatchItem.objects.get(batch=batch).status == "SUCCESS"


def test_a_crash_while_paying_a_chunk_loses_and_duplicates_nothing(custodian_user, payers, monkeypatch):
    batch = batch_submitted(custodian_user, [payment(payers[n % 2], "1.00") for n in range(6)])
    start = {p.id: balance(p.id) for p in payers}
    real = processing.payments_accept_held
    calls = {"n": 0}

    def crash_on_second_chunk(**kwargs):
        calls["n"] += 1
        outcome = real(**kwargs)
        if calls["n"] == 2:
            raise RuntimeError("worker killed")
        return outcome

    monkeypatch.setattr(processing, "payments_accept_held", crash_on_second_chunk)
    with pytest.raises(RuntimeError):
        batch_process(str(batch.id), chunk_size=2)
    assert batch.items.filter(status="PROCESSING", payment__isnull=True).count() == 2
    monkeypatch.setattr(processing, "payments_accept_held", real)

    batch_process(str(batch.id), chunk_size=2)

    batch.refresh_from_db()
    assert batch.status == "COMPLETED"
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 6
    assert {p.id: balance(p.id) for p in payers} == {
        pid: value - Decimal("3.00") for pid, value in start.items()
    }
    assert ledger_check().ok


def test_the_sweep_runs_stalled_batches_and_verifications_again(custodian_user, payers):
    from datetime import timedelta

    from django.utils import timezone

    from batches.models import Draft
    from batches.rules import sent_payment_from_wire
    from batches.tasks import resume_stalled_batches

    batch = batch_submitted(custodian_user, [payment(payers[0], "1.00")])
    draft = Draft.objects.create(
        program_id=custodian_user.program_id,
        custodian_id=custodian_user.custodian_id,
        payments=[sent_payment_from_wire(payment(payers[0], "1.00")).to_stored()],
        payments_count=1,
        expires_at=timezone.now() + timedelta(hours=1),
    )
    # Not yet stalled: left alone.
    assert resume_stalled_batches() == {"drafts": 0, "batches": 0}
    old = timezone.now() - timedelta(minutes=5)
    Batch.objects.filter(id=batch.id).update(progressed_at=old)
    Draft.objects.filter(id=draft.id).update(written_at=old)

    assert resume_stalled_batches() == {"drafts": 1, "batches": 1}

    assert Batch.objects.get(id=batch.id).status == "COMPLETED"
    assert Draft.objects.get(id=draft.id).valid_payments[0]["index"] == 0
    assert resume_stalled_batches() == {"drafts": 0, "batches": 0}


def test_each_status_change_writes_its_event_with_the_batch(custodian_user, custodian, payers):
    from events.models import Event

    short = custodian_payer(custodian, "1.00")
    done = batch_submitted(custodian_user, [payment(payers[0], "2.00"), payment(payers[0], "x")])
    refused = batch_submitted(custodian_user, [payment(short, "2.00")])
    invalid = batch_submitted(custodian_user, [payment(payers[0], "0")])
    for batch in (done, refused, invalid):
        batch_process(str(batch.id))

    def types(batch):
        return list(
            Event.objects.filter(resource_id=str(batch.id)).order_by("id").values_list("type", flat=True)
        )

    assert types(done) == ["batch.funded", "batch.partially_failed"]
    assert types(refused) == ["batch.funding_failed"]
    assert types(invalid) == ["batch.failed"]
    last = Event.objects.filter(resource_id=str(done.id)).order_by("id").last()
    assert last.custodian_id == custodian.id and last.customer_id is None
    assert last.data["status"] == "PARTIALLY_FAILED"
    assert last.data["itemsStatus"] == {"completed": 1, "pending": 0, "processing": 0, "failed": 1}
    assert last.data["totalAmount"] == "2.00"


def test_batch_payments_and_single_payments_share_the_daily_limit(custodian_user, payers):
    program = Program.objects.get(id=custodian_user.program_id)
    program.daily_outbound_limit = Decimal("100.00")
    program.save()
    payer = payers[0]
    payment_accept(
        account=payer,
        instruction=PaymentInstruction(amount=Decimal("30.00"), currency="GBP", reference="Before"),
    )
    batch = batch_submitted(custodian_user, [payment(payer, "60.00"), payment(payer, "10.01")])

    batch_process(str(batch.id))

    items = list(batch.items.order_by("index"))
    assert [i.status for i in items] == ["SUCCESS", "FAILED"]
    assert items[1].error.startswith("LIMIT_EXCEEDED")
    today = datetime.now(UTC).date()
    counted = Account.objects.get(id=payer.id)
    assert (counted.outbound_day, counted.outbound_total) == (today, Decimal("90.00"))
    # Its own savepoint, as every caller that goes on after a refusal opens one.
    with pytest.raises(ApiError) as refused, transaction.atomic():
        payment_accept(
            account=Account.objects.get(id=payer.id),
            instruction=PaymentInstruction(amount=Decimal("10.01"), currency="GBP", reference="After"),
        )
    assert refused.value.code == "LIMIT_EXCEEDED"
