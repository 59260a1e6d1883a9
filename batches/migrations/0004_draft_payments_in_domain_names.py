"""A draft's payments are stored in the domain's names, not the API's.

`Draft.payments` kept each payment as the API spells it (`payer.account.sortCode`,
`payee.accountType`, a file's `endToEndId`, ...). It becomes `batches.sent`'s
stored form: `account: {kind, sort_code, account_number, iban, bic}`,
`payee: {name, account, payee_type}`, `end_to_end_id`. Every value is kept as sent,
absent fields stay absent: the challenge initiate bound to the payments hashes
them in the API's names, and they convert back to exactly what was sent.

Both directions rewrite only the drafts still in the other form (a payment naming
a field only the other form has), so running one again is safe. The forms are
written out here rather than imported: this migration must keep meaning what it
meant when the code moves on.
"""

from typing import Any

from django.db import migrations

BATCH = 500

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


def payments_to_domain(payments: Any) -> Any:
    return [_payment(payment, True) for payment in payments] if isinstance(payments, list) else payments


def payments_to_api(payments: Any) -> Any:
    return [_payment(payment, False) for payment in payments] if isinstance(payments, list) else payments


def _rewrite(apps: Any, convert: Any) -> None:
    draft = apps.get_model("batches", "Draft")
    changed = []
    for draft_id, payments in draft.objects.values_list("id", "payments").iterator(chunk_size=BATCH):
        converted = convert(payments)
        if converted != payments:
            changed.append(draft(id=draft_id, payments=converted))
        if len(changed) == BATCH:
            draft.objects.bulk_update(changed, ["payments"])
            changed = []
    if changed:
        draft.objects.bulk_update(changed, ["payments"])


def forward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, payments_to_domain)


def backward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, payments_to_api)


class Migration(migrations.Migration):
    dependencies = [("batches", "0003_sca_challenge_name")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
