"""Each customer posting carries the account's balance after it; a failed
payment names the movement that reversed it."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

BATCH = 2000


def running_balances(apps, schema_editor):
    """Every customer posting gets its account's balance after it: the running
    sum of the account's postings in booking order (created_at, id); every
    account, when its latest posting was booked. Streamed and written a batch at
    a time, so a large ledger is never held in memory."""
    posting = apps.get_model("payments", "LedgerPosting")
    account = apps.get_model("bankapi", "Account")
    rows = (
        posting.objects.filter(account__isnull=False)
        .order_by("account_id", "created_at", "id")
        .values_list("id", "account_id", "amount", "created_at")
    )
    postings, accounts = [], []
    current, running, last_booked = None, None, None

    def account_done() -> None:
        if current is not None:
            accounts.append(account(id=current, last_booked_at=last_booked))
        if len(accounts) >= BATCH:
            account.objects.bulk_update(accounts, ["last_booked_at"])
            accounts.clear()

    for posting_id, account_id, amount, booked_at in rows.iterator(chunk_size=BATCH):
        if account_id != current:
            account_done()
            current, running = account_id, amount
        else:
            running += amount
        last_booked = booked_at
        postings.append(posting(id=posting_id, balance_after=running))
        if len(postings) == BATCH:
            posting.objects.bulk_update(postings, ["balance_after"])
            postings = []
    account_done()
    if postings:
        posting.objects.bulk_update(postings, ["balance_after"])
    if accounts:
        account.objects.bulk_update(accounts, ["last_booked_at"])


def reversal_links(apps, schema_editor):
    """A failed payment's reversal was keyed `reverse:<request id>`."""
    movement = apps.get_model("payments", "LedgerTransaction")
    request = apps.get_model("payments", "PaymentRequest")
    reversals = movement.objects.filter(kind="REVERSAL", key__startswith="reverse:").values_list("id", "key")
    for reversal_id, key in reversals.iterator(chunk_size=BATCH):
        request.objects.filter(id=key.removeprefix("reverse:")).update(reversal_id=reversal_id)


class Migration(migrations.Migration):
    dependencies = [
        ("bankapi", "0005_account_last_booked_at"),
        ("payments", "0002_outbound_usage_on_account"),
    ]

    operations = [
        migrations.AddField(
            model_name="ledgerposting",
            name="balance_after",
            field=models.DecimalField(blank=True, decimal_places=2, max_digits=18, null=True),
        ),
        migrations.AddIndex(
            model_name="ledgerposting",
            index=models.Index(fields=["account", "created_at", "id"], name="posting_account_booked_idx"),
        ),
        migrations.RemoveIndex(model_name="ledgerposting", name="payments_le_account_1c7492_idx"),
        migrations.AddField(
            model_name="paymentrequest",
            name="reversal",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="reversed_request",
                to="payments.ledgertransaction",
            ),
        ),
        migrations.AlterField(
            model_name="paymentrequest",
            name="acceptance",
            field=models.OneToOneField(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="accepted_request",
                to="payments.ledgertransaction",
            ),
        ),
        migrations.AlterField(
            model_name="ledgerposting",
            name="created_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.RunPython(running_balances, migrations.RunPython.noop),
        migrations.RunPython(reversal_links, migrations.RunPython.noop),
    ]
