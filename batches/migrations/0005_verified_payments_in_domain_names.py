"""A draft's verification results are stored in the domain's names, not the API's.

`Draft.valid_payments` and `Draft.invalid_payments` kept each entry as the
draft's GET answers it: `{index, payment, reasons}` with the payment in the
API's names (`payer.account.sortCode`, `payee.accountType`, a file's
`endToEndId`, ...). The payment becomes `batches.sent`'s stored form, as
`Draft.payments` keeps it: `account: {kind, sort_code, account_number, iban,
bic}`, `payee: {name, account, payee_type}`, `end_to_end_id`. `index` and
`reasons` keep their names and values; every value of the payment is kept as
sent and absent fields stay absent, so the GET answers the same after it.

Both directions rename only the keys still in the other form, so running one
again is safe. The forms are written out here rather than imported: this
migration must keep meaning what it meant when the code moves on.
"""

from typing import Any

from django.db import migrations

BATCH = 500
FIELDS = ("valid_payments", "invalid_payments")

ACCOUNT_TO_DOMAIN = {"type": "kind", "sortCode": "sort_code", "accountNumber": "account_number"}
PAYEE_TO_DOMAIN = {"accountType": "payee_type"}
PAYMENT_TO_DOMAIN = {"endToEndId": "end_to_end_id"}


def _inverse(names: dict[str, str]) -> dict[str, str]:
    return {new: old for old, new in names.items()}


def _renamed(data: Any, names: dict[str, str]) -> Any:
    if not isinstance(data, dict):
        return data
    return {names.get(key, key): value for key, value in data.items()}


def _party(party: Any, names: dict[str, str], account_names: dict[str, str]) -> Any:
    party = _renamed(party, names)
    if isinstance(party, dict) and "account" in party:
        party["account"] = _renamed(party["account"], account_names)
    return party


def _payment(payment: Any, to_domain: bool) -> Any:
    payment_names = PAYMENT_TO_DOMAIN if to_domain else _inverse(PAYMENT_TO_DOMAIN)
    payee_names = PAYEE_TO_DOMAIN if to_domain else _inverse(PAYEE_TO_DOMAIN)
    account_names = ACCOUNT_TO_DOMAIN if to_domain else _inverse(ACCOUNT_TO_DOMAIN)
    payment = _renamed(payment, payment_names)
    if not isinstance(payment, dict):
        return payment
    if "payer" in payment:
        payment["payer"] = _party(payment["payer"], {}, account_names)
    if "payee" in payment:
        payment["payee"] = _party(payment["payee"], payee_names, account_names)
    return payment


def _entry(entry: Any, to_domain: bool) -> Any:
    if not isinstance(entry, dict) or "payment" not in entry:
        return entry
    return {**entry, "payment": _payment(entry["payment"], to_domain)}


def results_to_domain(results: Any) -> Any:
    return [_entry(entry, True) for entry in results] if isinstance(results, list) else results


def results_to_api(results: Any) -> Any:
    return [_entry(entry, False) for entry in results] if isinstance(results, list) else results


def _rewrite(model: Any, convert: Any) -> None:
    """Rewrite the results of every draft `convert` changes, a batch at a time."""
    changed = []
    rows = model.objects.filter(verified_at__isnull=False).values_list("id", *FIELDS)
    for row_id, *values in rows.iterator(chunk_size=BATCH):
        converted = [convert(value) for value in values]
        if converted != values:
            changed.append(model(id=row_id, **dict(zip(FIELDS, converted, strict=True))))
        if len(changed) == BATCH:
            model.objects.bulk_update(changed, list(FIELDS))
            changed = []
    if changed:
        model.objects.bulk_update(changed, list(FIELDS))


def forward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps.get_model("batches", "Draft"), results_to_domain)


def backward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps.get_model("batches", "Draft"), results_to_api)


class Migration(migrations.Migration):
    dependencies = [("batches", "0004_stored_payments_in_domain_names")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
