"""Each customer posting carries its statement line (kind, payment request,
reference, description), so that a statement reads the postings alone.

Existing postings are filled from their movement and the payment request whose
acceptance or reversal it is, by one UPDATE that the database runs on its own
(no row passes through Python), with the rule the ledger follows when it
posts (`payments.ledger.statement_line_facts`), written here as it stood.
"""

from django.db import migrations, models

# Labels of the movement kinds, as they stood.
KIND_LABELS = {
    "FUNDING": "Funding",
    "PAYMENT": "Payment accepted",
    "SETTLEMENT": "Payment settled",
    "REVERSAL": "Payment reversed",
    "FX": "Currency conversion",
}


def statement_lines(apps, schema_editor):
    posting = apps.get_model("payments", "LedgerPosting")
    movement = apps.get_model("payments", "LedgerTransaction")
    request = apps.get_model("payments", "PaymentRequest")
    name = schema_editor.connection.ops.quote_name
    p, t, r = (name(model._meta.db_table) for model in (posting, movement, request))
    accepted = f"(SELECT r.id FROM {r} r WHERE r.acceptance_id = {p}.transaction_id)"
    reversed_ = f"(SELECT r.id FROM {r} r WHERE r.reversal_id = {p}.transaction_id)"
    request_id = f"COALESCE({accepted}, {reversed_})"
    reference = (
        f"(SELECT r.reference FROM {r} r WHERE r.acceptance_id = {p}.transaction_id "
        f"OR r.reversal_id = {p}.transaction_id)"
    )
    kind = f"(SELECT t.kind FROM {t} t WHERE t.id = {p}.transaction_id)"
    memo = f"(SELECT t.memo FROM {t} t WHERE t.id = {p}.transaction_id)"
    labels = " ".join(f"WHEN '{value}' THEN '{label}'" for value, label in KIND_LABELS.items())
    description = (
        f"CASE WHEN {kind} = 'PAYMENT' THEN CASE WHEN {request_id} IS NULL "
        "THEN 'Funds reserved for batch payments' ELSE 'Payment' END "
        f"WHEN {kind} = 'REVERSAL' THEN CASE WHEN {request_id} IS NULL "
        f"THEN 'Reserved funds released' ELSE 'Payment failed: ' || {memo} END "
        f"ELSE COALESCE(CASE {kind} {labels} END, {kind}) END"
    )
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {p} SET kind = {kind}, request_id = {request_id}, "  # noqa: S608
            f"reference = SUBSTR(COALESCE(NULLIF({reference}, ''), {memo}), 1, 140), "
            f"description = {description} WHERE {p}.account_id IS NOT NULL"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("payments", "0006_stored_payees_in_domain_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="ledgerposting",
            name="kind",
            field=models.CharField(blank=True, default="", max_length=12),
        ),
        migrations.AddField(
            model_name="ledgerposting",
            name="request_id",
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="ledgerposting",
            name="reference",
            field=models.CharField(blank=True, default="", max_length=140),
        ),
        migrations.AddField(
            model_name="ledgerposting",
            name="description",
            field=models.CharField(blank=True, default="", max_length=240),
        ),
        migrations.RunPython(statement_lines, migrations.RunPython.noop),
    ]
