"""An accepted payment written in one statement on PostgreSQL
(`payments.services.acceptance.payment_accept_at_once`): the same rows as the
transaction of separate statements, nothing written when the account's row or
the idempotency claim refuses it."""

import uuid
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode
from bankapi.idempotency import HeldClaim, StoredResponse
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


def _claim(account: Account) -> IdempotencyRecord:
    return IdempotencyRecord.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        owner_kind=IdempotencyRecord.OwnerKind.CUSTOMER,
        owner_id=account.customer_id,
        operation="payments.create",
        key=uuid.uuid4(),
        fingerprint={},
        claimed_at=timezone.now(),
    )


ANSWER = StoredResponse(status=200, content=b'{"success":true}')


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
    record = IdempotencyRecord.objects.get(key=key)
    assert record.state == IdempotencyRecord.State.COMPLETED
    assert bytes(record.response_body) == response.content

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


def test_a_claim_taken_over_writes_nothing(account, beneficiary):
    record = _claim(account)
    held = HeldClaim(IdempotencyRecord.objects.get(id=record.id))
    # Another request took the stale claim over: a new fencing token.
    IdempotencyRecord.objects.filter(id=record.id).update(claim_token=uuid.uuid4())
    before = Account.objects.get(id=account.id).balance

    with pytest.raises(ApiError) as raised:
        payment_accept_at_once(
            account=account,
            instruction=_instruction(beneficiary, "5.00"),
            claim=held,
            respond=lambda r: ANSWER,
        )

    assert raised.value.code == ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS
    assert Account.objects.get(id=account.id).balance == before
    assert not PaymentRequest.objects.filter(account=account).exists()
    assert IdempotencyRecord.objects.get(id=record.id).state == IdempotencyRecord.State.CLAIMED


def test_a_debit_the_row_refuses_writes_nothing_and_leaves_the_decision_to_payment_accept(
    low_account, beneficiary
):
    record = _claim(low_account)
    held = HeldClaim(record)

    done = payment_accept_at_once(
        account=low_account,
        instruction=_instruction(beneficiary, "6.00"),
        claim=held,
        respond=lambda r: ANSWER,
    )

    assert done is None
    assert Account.objects.get(id=low_account.id).balance == Decimal("5.00")
    assert not PaymentRequest.objects.filter(account=low_account).exists()
    assert not LedgerPosting.objects.filter(account=low_account, amount__lt=0).exists()
    assert IdempotencyRecord.objects.get(id=record.id).state == IdempotencyRecord.State.CLAIMED


def test_without_a_key_it_writes_the_payment_alone(account, beneficiary):
    done = payment_accept_at_once(
        account=account, instruction=_instruction(beneficiary, "7.00"), claim=None, respond=lambda r: ANSWER
    )

    assert done is not None
    request, answer = done
    assert answer is ANSWER
    assert PaymentRequest.objects.get(id=request.id).amount == Decimal("7.00")
    assert Account.objects.get(id=account.id).balance == account.balance
