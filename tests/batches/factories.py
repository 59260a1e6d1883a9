"""Batches made directly in the database, for the read routes' tests."""

from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from bankapi.models import Account
from batches.models import Batch, BatchItem
from batches.payees import ItemPayee

PAYEE = ItemPayee(name="Jane Payee", sort_code="200000", account_number="55779911").to_stored()


def make_batch(
    *,
    account: Account,
    custodian=None,
    owner_customer=None,
    statuses: tuple[str, ...] = ("SUCCESS", "FAILED"),
    amount: str = "10.00",
    created_at: datetime | None = None,
) -> Batch:
    batch = Batch.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        custodian=custodian,
        owner_customer=owner_customer,
        customer_id=account.customer_id,
        status=Batch.Status.PARTIALLY_FAILED,
        payments_count=len(statuses),
        valid_count=len(statuses),
        currency=account.currency,
    )
    BatchItem.objects.bulk_create(
        BatchItem(
            program_id=account.program_id,
            sandbox=account.sandbox,
            batch=batch,
            index=index,
            status=status,
            error="LIMIT_EXCEEDED: test" if status == "FAILED" else "",
            account=account,
            customer_id=account.customer_id,
            payer_name="Payer",
            payer_account_number=account.account_number,
            payee=PAYEE,
            amount=Decimal(amount),
            currency=account.currency,
            reference="Test",
            scheduled_date=timezone.now().date(),
        )
        for index, status in enumerate(statuses)
    )
    if created_at is not None:
        Batch.objects.filter(id=batch.id).update(created_at=created_at)
        batch.refresh_from_db()
    return batch
