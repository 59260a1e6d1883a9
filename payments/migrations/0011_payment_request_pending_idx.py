"""The partial index settlement claims from: PENDING requests only, so a claim
costs the backlog, not the history. Built concurrently on PostgreSQL (writes
go on during the build), hence not atomic."""

from django.db import migrations, models

from bankapi.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("payments", "0010_holds"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="paymentrequest",
            index=models.Index(
                condition=models.Q(("status", "PENDING")),
                fields=["sandbox", "created_at", "id"],
                name="payment_request_pending_idx",
            ),
        ),
    ]
