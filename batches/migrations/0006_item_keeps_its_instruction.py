"""A batch item keeps the whole instruction it was given, and why it failed.

- `instruction_id` held the file's PmtInf/PmtInfId: it becomes
  `payment_information_id`, and `instruction_id` is the transaction's
  PmtId/InstrId (not read before: empty on existing items).
- `message_id`: the file's GrpHdr/MsgId, copied from the item's batch.
- `currency` held the payer account's currency; it becomes the currency the
  amount was instructed in. A file states it for each transaction, and the
  file's draft (whose id the batch takes) still holds it: items whose file
  stated another currency get it back.
- `failure_code`: INVALID for an item FAILED at submit, else the code its error
  text begins with (INSUFFICIENT_FUNDS, LIMIT_EXCEEDED, ...).

Backward: the currency goes back to the payer account's, `failure_code` and
`message_id` are dropped with their columns, and `payment_information_id` is
named `instruction_id` again.
"""

from typing import Any

from django.db import migrations, models
from django.db.models import Q

BATCH = 500
CODES = ("INSUFFICIENT_FUNDS", "LIMIT_EXCEEDED", "NOT_SUPPORTED", "VALIDATION_ERROR")


def _failure_code(error: str) -> str:
    for code in CODES:
        if error.startswith(f"{code}:"):
            return code
    # Funding and acceptance refusals start with their code: anything else is
    # the item rules' reasons, given at submit.
    return "INVALID"


def forward(apps: Any, schema_editor: Any) -> None:
    Batch = apps.get_model("batches", "Batch")
    BatchItem = apps.get_model("batches", "BatchItem")
    Draft = apps.get_model("batches", "Draft")
    for batch in Batch.objects.values("id", "message_id").iterator(chunk_size=BATCH):
        BatchItem.objects.filter(batch_id=batch["id"]).update(message_id=batch["message_id"])
        if not batch["message_id"]:
            continue
        draft = Draft.objects.filter(id=batch["id"]).values("payments").first()
        stated = {
            index: payment["currency"]
            for index, payment in enumerate((draft or {}).get("payments") or [])
            if isinstance(payment, dict) and payment.get("currency")
        }
        for item in BatchItem.objects.filter(batch_id=batch["id"]).only("id", "index", "currency"):
            currency = stated.get(item.index)
            if currency and currency != item.currency:
                BatchItem.objects.filter(id=item.id).update(currency=currency)
    for item in BatchItem.objects.filter(status="FAILED").only("id", "error").iterator(chunk_size=BATCH):
        BatchItem.objects.filter(id=item.id).update(failure_code=_failure_code(item.error))


def backward(apps: Any, schema_editor: Any) -> None:
    BatchItem = apps.get_model("batches", "BatchItem")
    items = (
        BatchItem.objects.filter(~Q(account=None)).select_related("account").only("id", "account__currency")
    )
    for item in items.iterator(chunk_size=BATCH):
        BatchItem.objects.filter(id=item.id).update(currency=item.account.currency)


class Migration(migrations.Migration):
    dependencies = [("batches", "0005_verified_payments_in_domain_names")]

    operations = [
        migrations.RenameField("batchitem", "instruction_id", "payment_information_id"),
        migrations.AddField(
            model_name="batchitem",
            name="instruction_id",
            field=models.CharField(blank=True, max_length=35),
        ),
        migrations.AddField(
            model_name="batchitem",
            name="message_id",
            field=models.CharField(blank=True, max_length=35),
        ),
        migrations.AddField(
            model_name="batchitem",
            name="failure_code",
            field=models.CharField(blank=True, max_length=32),
        ),
        migrations.RunPython(forward, backward, elidable=False),
    ]
