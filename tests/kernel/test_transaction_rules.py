"""Transaction rules the code enforces instead of stating them: the idempotency
claim refuses a caller's transaction, and a refused payment acceptance leaves a
caller that did not open its own savepoint unable to go on as if nothing happened."""

import uuid
from decimal import Decimal

import pytest
from django.db import transaction
from django.db.transaction import TransactionManagementError

from bankapi.errors import ApiError
from bankapi.idempotency import Fingerprint, OwnerKind, StoredResponse, idempotent_call
from bankapi.models import IdempotencyRecord
from bankapi.transactions import outside_transaction_require
from payments.models import PaymentRequest
from payments.services.acceptance import PaymentInstruction, payment_accept
from tests.support.factories import funded_account


def test_outside_transaction_require_passes_outside_and_raises_inside(db):
    outside_transaction_require("the check")

    with pytest.raises(RuntimeError, match="the check must run outside any transaction"):
        with transaction.atomic():
            outside_transaction_require("the check")


@pytest.mark.parametrize("key", [None, uuid.uuid4()], ids=["without a key", "with a key"])
def test_an_idempotent_call_inside_a_callers_transaction_fails_before_any_work(customer, key):
    runs = []

    def work() -> StoredResponse:
        runs.append(1)
        return StoredResponse.rendered(200, {"success": True})

    with pytest.raises(RuntimeError, match="idempotent_checked_call must run outside any transaction"):
        with transaction.atomic():
            idempotent_call(
                program=customer.program,
                sandbox=True,
                owner_kind=OwnerKind.CUSTOMER,
                owner_id=customer.id,
                operation="tests.create",
                key=key,
                fingerprint=Fingerprint({}),
                work=work,
            )

    assert runs == []
    assert not IdempotencyRecord.objects.filter(operation="tests.create").exists()


def too_much(account) -> PaymentInstruction:
    return PaymentInstruction(amount=Decimal("1000.00"), currency=account.currency, reference="Ref")


def test_a_refused_acceptance_poisons_a_callers_transaction_without_its_own_savepoint(customer):
    account = funded_account(customer, "10.00")

    with pytest.raises(TransactionManagementError):
        with transaction.atomic():
            with pytest.raises(ApiError):
                payment_accept(account=account, instruction=too_much(account))
            PaymentRequest.objects.count()


def test_a_caller_with_its_own_savepoint_goes_on_after_a_refusal(customer):
    account = funded_account(customer, "10.00")

    with transaction.atomic():
        with pytest.raises(ApiError), transaction.atomic():
            payment_accept(account=account, instruction=too_much(account))
        accepted = payment_accept(
            account=account,
            instruction=PaymentInstruction(
                amount=Decimal("5.00"), currency=account.currency, reference="Ref"
            ),
        )

    assert PaymentRequest.objects.filter(account=account).get() == accepted
