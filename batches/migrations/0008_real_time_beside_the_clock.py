"""Batches and drafts keep real times beside their owner's (a test clock's, for
its customers): `progressed_at`, when a batch last moved (the stall sweep and its
figure read it), and a draft's `written_at` (the sweep of stalled verifications
and the payload purge read it). Rows written before take the migration's time."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("batches", "0007_holds"),
    ]

    operations = [
        migrations.AddField(
            model_name="batch",
            name="progressed_at",
            field=models.DateTimeField(auto_now=True, default=django.utils.timezone.now),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="draft",
            name="written_at",
            field=models.DateTimeField(auto_now_add=True, default=django.utils.timezone.now),
            preserve_default=False,
        ),
    ]
