"""An accepted payment written in one statement on PostgreSQL
(`payments.services.acceptance.payment_accept_at_once`): the same rows as the
transaction of separate statements, and the idempotency key's record with its
answer; nothing written when the account's row refuses it or the key already
has a record."""

import uuid
from decimal import Decimal
from unittest import mock

import pytest
from django.db import IntegrityError, connection
from django.utils import timezone

from bankapi.idempotency import Fingerprint, FirstUse, KeySlot, KeyTaken, StoredResponse
from bankapi.models import Account, IdempotencyRecord
from events.models import Event, EventType
from payments.models import LedgerPosting, PaymentRequest
from payments.services.acceptance import PaymentInstruction, payment_accept_at_once
from tests.payments.conftest import payments_url

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one statement with data-modifying steps: PostgreSQL only"
)


def _instruction(beneficiary, amount: str) -> PaymentInstruction:
    return PaymentInstruction(
        amount=Decimal(amount),
        currency="GBP",
        reference="Invoice 42",
        beneficiary=beneficiary,
        payee=beneficiary.payee(),
    )


def _first_use(account: Account, key: uuid.UUID | None = None) -> FirstUse:
    slot = KeySlot(
        program=account.program,
        sandbox=account.sandbox,
        owner_kind=IdempotencyRecord.OwnerKind.CUSTOMER,
        owner_id=account.customer_id,
        operation="payments.create",
        key=key or uuid.uuid4(),
    )
    return FirstUse(slot, Fingerprint({"amount": "5.00"}))


def _claim_left_behind(first_use: FirstUse) -> IdempotencyRecord:
    record = first_use.slot.record(first_use.fingerprint, timezone.now())
    record.save()
    return record


ANSWER = StoredResponse(status=200, content=b'{"success":true}')


def _accept(account: Account, beneficiary, amount: str, claim: FirstUse | None = None):
    return payment_accept_at_once(
        account=account, instruction=_instruction(beneficiary, amount), claim=claim, respond=lambda r: ANSWER
    )


def test_the_route_writes_what_a_payment_writes_and_completes_its_key(
    api, account, beneficiary, customer_auth
):
    before = account.balance
    key = str(uuid.uuid4())
    response = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "12.34", "reference": "Invoice 42", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
        HTTP_X_REQUEST_ID="req-at-once-1",
        **customer_auth,
    )

    assert response.status_code == 200
    request = PaymentRequest.objects.get(id=response.json()["data"]["bankTransfer"]["requestId"])
    assert (request.status, request.amount, request.beneficiary_id) == (
        PaymentRequest.Status.PENDING,
        Decimal("12.34"),
        beneficiary.id,
    )
    account.refresh_from_db()
    assert account.balance == before - Decimal("12.34")
    assert account.outbound_total == Decimal("12.34")
    posting = LedgerPosting.objects.get(transaction=request.acceptance, account=account)
    assert (posting.amount, posting.balance_after, posting.created_at) == (
        Decimal("-12.34"),
        account.balance,
        account.last_booked_at,
    )
    assert (posting.request_id, posting.reference) == (request.id, "Invoice 42")
    assert LedgerPosting.objects.filter(transaction=request.acceptance).count() == 2
    event = Event.objects.get(resource_id=str(request.id))
    assert event.type == EventType.PAYMENT_REQUEST_ACCEPTED
    assert event.data["createdDateTime"] == request.created_at.isoformat()
    # Written by the same statement, with the id its fan-out and deliveries log under.
    assert event.request_id == "req-at-once-1"
    # The key's record, as a claim completed with its answer would be.
    record = IdempotencyRecord.objects.get(key=key)
    assert (record.state, record.response_status) == (IdempotencyRecord.State.COMPLETED, 200)
    assert bytes(record.response_body) == response.content
    assert (record.owner_kind, record.owner_id, record.operation) == (
        IdempotencyRecord.OwnerKind.CUSTOMER,
        account.customer_id,
        "payments.create",
    )
    assert record.fingerprint["fields"] == {
        "amount": "12.34",
        "account_id": str(account.id),
        "beneficiary_id": str(beneficiary.id),
    }
    assert record.claimed_at <= record.updated_at and record.claim_token is not None

    replay = api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "12.34", "reference": "Invoice 42", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
        **customer_auth,
    )
    assert replay.content == response.content
    assert replay["Idempotent-Replayed"] == "true"
    assert PaymentRequest.objects.filter(account=account).count() == 1


def test_a_key_already_recorded_refuses_the_whole_statement(account, beneficiary):
    first_use = _first_use(account)
    # A request with the same key holds it (or has answered): its record is there.
    record = _claim_left_behind(first_use)
    before = Account.objects.get(id=account.id)
    events_before = Event.objects.count()

    with pytest.raises(KeyTaken):
        _accept(account, beneficiary, "5.00", first_use)

    after = Account.objects.get(id=account.id)
    assert (after.balance, after.outbound_total) == (before.balance, before.outbound_total)
    assert not PaymentRequest.objects.filter(account=account).exists()
    assert not LedgerPosting.objects.filter(account=account, amount__lt=0).exists()
    assert Event.objects.count() == events_before
    assert IdempotencyRecord.objects.get() == record
    assert IdempotencyRecord.objects.get().state == IdempotencyRecord.State.CLAIMED


def test_a_debit_the_row_refuses_writes_nothing_and_leaves_the_decision_to_payment_accept(
    low_account, beneficiary
):
    done = _accept(low_account, beneficiary, "6.00", _first_use(low_account))

    assert done is None
    assert Account.objects.get(id=low_account.id).balance == Decimal("5.00")
    assert not PaymentRequest.objects.filter(account=low_account).exists()
    assert not LedgerPosting.objects.filter(account=low_account, amount__lt=0).exists()
    # No answer was given, so the key stays free for a retry.
    assert not IdempotencyRecord.objects.exists()


def test_another_refusal_of_the_database_is_not_mistaken_for_a_taken_key(account, beneficiary):
    first_use = _first_use(account)
    existing = _accept(account, beneficiary, "1.00")
    assert existing is not None
    # New ids all equal to that payment's: the request's INSERT collides with it.
    with (
        mock.patch("uuid.uuid4", return_value=existing[0].id),
        mock.patch("payments.writer.write_ordered_uuid", return_value=existing[0].id),
    ):
        with pytest.raises(IntegrityError):
            _accept(account, beneficiary, "5.00", first_use)

    assert not IdempotencyRecord.objects.exists()


def test_without_a_key_it_writes_the_payment_alone(account, beneficiary):
    done = _accept(account, beneficiary, "7.00")

    assert done is not None
    request, answer = done
    assert answer is ANSWER
    assert PaymentRequest.objects.get(id=request.id).amount == Decimal("7.00")
    assert Account.objects.get(id=account.id).balance == account.balance
