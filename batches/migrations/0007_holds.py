"""Batch funding holds each item's amount and fee instead of booking it.

Funding used to debit each payer's total to clearing (a "reserve" entry) and
every processed chunk credited it back (a "release" entry) before booking each
item. Now funding places one hold per item (`payments.Hold`), which lowers the
available balance and is not a booking, and an item links to its hold.

Money still reserved the old way (items funded and not yet paid or refused)
sits in clearing and has no hold: converting it would mean new ledger entries
made by a migration. So the migration refuses to run while any such item
exists; let running batches finish (stop the web nodes' submits, let the
workers drain) and run it again. Finished batches need nothing: their reserve
and release entries were bookings when they were made and stay in the ledger.

Backward, likewise, refuses while any hold is open.
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

OPEN = ("QUEUED", "PROCESSING")


def _no_reserved_items(apps: Any, schema_editor: Any) -> None:
    items = apps.get_model("batches", "BatchItem").objects.using(schema_editor.connection.alias)
    waiting = items.filter(reserved_amount__isnull=False, payment__isnull=True, status__in=OPEN)
    batches = sorted({str(batch_id) for batch_id in waiting.values_list("batch_id", flat=True)[:1000]})
    if batches:
        raise RuntimeError(
            f"{len(batches)} batch(es) have items funded the old way and not yet paid: "
            f"{', '.join(batches[:10])}. Let their processing finish, then migrate again."
        )


def _no_open_holds(apps: Any, schema_editor: Any) -> None:
    holds = apps.get_model("payments", "Hold").objects.using(schema_editor.connection.alias)
    if holds.filter(released_at__isnull=True).exists():
        raise RuntimeError("Holds are open: let running batches finish, then migrate back.")


class Migration(migrations.Migration):
    dependencies = [
        ("batches", "0006_item_keeps_its_instruction"),
        ("payments", "0010_holds"),
        ("bankapi", "0007_holds"),
    ]

    operations = [
        migrations.RunPython(_no_reserved_items, _no_open_holds),
        migrations.RemoveField(model_name="batchitem", name="reserved_amount"),
        migrations.AddField(
            model_name="batchitem",
            name="hold",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="batch_item",
                to="payments.hold",
            ),
        ),
    ]
