"""The migration to holds refuses to run over money funded the old way (a
reserve booked to clearing, items not yet paid), and back over open holds: in
both cases the money would lose its record. With neither, it runs both ways."""

import uuid
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from bankapi.models import Account
from batches.models import BatchItem
from payments.ledger import HoldOrder, holds_open, holds_release, ledger_check, lock_accounts
from payments.services.held import funds_hold
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted

BEFORE_HOLDS = "0006_item_keeps_its_instruction"


def _migrate(target: str | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("batches", target)] if target else executor.loader.graph.leaf_nodes())


@pytest.fixture
def migrations_restored(transactional_db):
    yield
    _migrate()


def _stored_id(value: uuid.UUID) -> str:
    return value.hex if connection.vendor == "sqlite" else str(value)


def test_open_holds_stop_the_way_back_and_old_reserves_stop_the_way_forward(
    custodian_user, custodian_accounts, migrations_restored
):
    payer = custodian_accounts[0]
    # Submitted in a committed transaction: processing runs at once and pays both.
    batch = batch_submitted(custodian_user, [payment(payer, "4.00"), payment(payer, "6.00")])
    assert [item.status for item in batch.items.all()] == ["SUCCESS", "SUCCESS"]
    hold = HoldOrder(id=uuid.uuid4(), account_id=uuid.UUID(payer["accountId"]), amount=Decimal("5.00"))
    with transaction.atomic():
        assert funds_hold([hold]) == {hold.account_id: None}

    # Back: a hold is open, and the old schema has no place for it.
    with pytest.raises(RuntimeError, match="Holds are open"):
        _migrate(BEFORE_HOLDS)

    # Once nothing is held, the way back is open.
    with transaction.atomic():
        holds_release(
            list(holds_open([hold.id]).values()), locked=lock_accounts([hold.account_id]), now=timezone.now()
        )
    _migrate(BEFORE_HOLDS)
    first, second = BatchItem.objects.filter(batch=batch).order_by("index").values_list("id", flat=True)
    with connection.cursor() as cursor:
        # An item funded the old way and not paid yet: its money is a reserve in clearing.
        cursor.execute(
            "UPDATE batches_batchitem SET reserved_amount = 6, status = 'QUEUED', payment_id = NULL "
            "WHERE id = %s",
            [_stored_id(second)],
        )

    # Forward: refused, naming the batch to let finish.
    with pytest.raises(RuntimeError, match=str(batch.id)):
        _migrate()

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE batches_batchitem SET status = 'SUCCESS', payment_id = %s WHERE id = %s",
            [_stored_id(second), _stored_id(second)],
        )
    _migrate()

    items = BatchItem.objects.filter(batch=batch).order_by("index")
    assert [(item.id, item.status, item.hold_id) for item in items] == [
        (first, "SUCCESS", None),
        (second, "SUCCESS", None),
    ]
    assert Account.objects.get(id=hold.account_id).held == 0
    assert ledger_check().ok
