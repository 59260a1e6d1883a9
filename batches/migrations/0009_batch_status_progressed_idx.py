"""The stall sweep reads unfinished batches by `progressed_at` (real time), no
longer by `updated_at` (the owner's time): its index follows. Built
concurrently on PostgreSQL (writes go on during the build), hence not atomic."""

from django.db import migrations, models

from bankapi.migration_operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("batches", "0008_real_time_beside_the_clock"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="batch",
            index=models.Index(fields=["status", "progressed_at"], name="batch_status_progressed_idx"),
        ),
        migrations.RemoveIndex(
            model_name="batch",
            name="batches_bat_status_71a72a_idx",
        ),
    ]
