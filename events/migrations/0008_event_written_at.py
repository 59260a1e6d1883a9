"""Events keep the real time they were written beside their customer's time: the
outbox's age and the fan-out sweep read it, whatever test clock the customer
lives at. Rows written before take the migration's time (PostgreSQL stores a
constant default without rewriting the table)."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0007_incoming_and_card_authorization_events"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="written_at",
            field=models.DateTimeField(auto_now_add=True, default=django.utils.timezone.now, editable=False),
            preserve_default=False,
        ),
    ]
