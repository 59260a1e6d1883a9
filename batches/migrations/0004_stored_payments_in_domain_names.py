"""A draft's payments and file instructions, and a batch item's payee, are
stored in the domain's names, not the API's.

`Draft.payments` kept each payment as the API spells it (`payer.account.sortCode`,
`payee.accountType`, a file's `endToEndId`, ...). It becomes `batches.sent`'s
stored form: `account: {kind, sort_code, account_number, iban, bic}`,
`payee: {name, account, payee_type}`, `end_to_end_id`. Every value is kept as sent,
absent fields stay absent: the challenge initiate bound to the payments hashes
them in the API's names, and they convert back to exactly what was sent.

A file draft's `instructions` kept `{id, executionDate, count}`; they become
`batches.sent.FileInstruction`'s `{id, execution_date, count}`.

`BatchItem.payee` kept `{name, accountNumber, sortCode, iban, bic, accountType}`;
it becomes `batches.payees.ItemPayee`'s stored form: `{name, account_number,
sort_code, iban, bic, payee_type}`.

Both directions rewrite only the rows still in the other form (a payment naming
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
INSTRUCTION_TO_DOMAIN = {"executionDate": "execution_date"}
ITEM_PAYEE_TO_DOMAIN = {
    "sortCode": "sort_code",
    "accountNumber": "account_number",
    "accountType": "payee_type",
}


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


def instructions_to_domain(instructions: Any) -> Any:
    if not isinstance(instructions, list):
        return instructions
    return [_renamed(instruction, INSTRUCTION_TO_DOMAIN) for instruction in instructions]


def instructions_to_api(instructions: Any) -> Any:
    if not isinstance(instructions, list):
        return instructions
    return [_renamed(instruction, _inverse(INSTRUCTION_TO_DOMAIN)) for instruction in instructions]


def item_payee_to_domain(payee: Any) -> Any:
    return _renamed(payee, ITEM_PAYEE_TO_DOMAIN)


def item_payee_to_api(payee: Any) -> Any:
    return _renamed(payee, _inverse(ITEM_PAYEE_TO_DOMAIN))


def _rewrite(model: Any, field: str, convert: Any) -> None:
    """Rewrite `field` of every row `convert` changes, a batch at a time."""
    changed = []
    for row_id, value in model.objects.values_list("id", field).iterator(chunk_size=BATCH):
        converted = convert(value)
        if converted != value:
            changed.append(model(id=row_id, **{field: converted}))
        if len(changed) == BATCH:
            model.objects.bulk_update(changed, [field])
            changed = []
    if changed:
        model.objects.bulk_update(changed, [field])


def forward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps.get_model("batches", "Draft"), "payments", payments_to_domain)
    _rewrite(apps.get_model("batches", "Draft"), "instructions", instructions_to_domain)
    _rewrite(apps.get_model("batches", "BatchItem"), "payee", item_payee_to_domain)


def backward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps.get_model("batches", "Draft"), "payments", payments_to_api)
    _rewrite(apps.get_model("batches", "Draft"), "instructions", instructions_to_api)
    _rewrite(apps.get_model("batches", "BatchItem"), "payee", item_payee_to_api)


class Migration(migrations.Migration):
    dependencies = [("batches", "0003_sca_challenge_name")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
