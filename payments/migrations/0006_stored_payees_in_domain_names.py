"""Payees and schedule details are stored in the domain's names, not the API's.

`PaymentRequest.payee` and `ScheduledPayment.details["payee"]` were kept as the
API spells a payee (`{name, account: {type, sortCode, accountNumber | iban, bic},
accountType}`) and the schedule details as the API spells them (`chargeBearer`,
`virtualIban`, `feeWaived`). They become `{name, account: {kind, sort_code,
account_number | iban, bic}, payee_type}` and `charge_bearer`, `virtual_iban`,
`fee_waived` (`payments.payees`).

Both directions rewrite only the rows still in the other form, so running one
again (after a process still on the old code wrote a row) is safe. The forms are
written out here rather than imported: this migration must keep meaning what it
meant when the code moves on.
"""

from typing import Any

from django.db import migrations

BATCH = 2000

ACCOUNT_TO_DOMAIN = {"type": "kind", "sortCode": "sort_code", "accountNumber": "account_number"}
PAYEE_TO_DOMAIN = {"accountType": "payee_type"}
DETAILS_TO_DOMAIN = {"chargeBearer": "charge_bearer", "virtualIban": "virtual_iban", "feeWaived": "fee_waived"}


def _renamed(data: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {names.get(key, key): value for key, value in data.items()}


def _inverse(names: dict[str, str]) -> dict[str, str]:
    return {new: old for old, new in names.items()}


def payee_to_domain(payee: Any) -> Any:
    """A payee in the API's names, in the domain's; anything else as it is."""
    if not isinstance(payee, dict) or not isinstance(payee.get("account"), dict):
        return payee
    if "type" not in payee["account"]:
        return payee
    return _renamed(payee, PAYEE_TO_DOMAIN) | {"account": _renamed(payee["account"], ACCOUNT_TO_DOMAIN)}


def payee_to_api(payee: Any) -> Any:
    """The reverse of `payee_to_domain`."""
    if not isinstance(payee, dict) or not isinstance(payee.get("account"), dict):
        return payee
    if "kind" not in payee["account"]:
        return payee
    return _renamed(payee, _inverse(PAYEE_TO_DOMAIN)) | {
        "account": _renamed(payee["account"], _inverse(ACCOUNT_TO_DOMAIN))
    }


def details_to_domain(details: Any) -> Any:
    if not isinstance(details, dict):
        return details
    renamed = _renamed(details, DETAILS_TO_DOMAIN)
    if "payee" in renamed:
        renamed["payee"] = payee_to_domain(renamed["payee"])
    return renamed


def details_to_api(details: Any) -> Any:
    if not isinstance(details, dict):
        return details
    renamed = _renamed(details, _inverse(DETAILS_TO_DOMAIN))
    if "payee" in renamed:
        renamed["payee"] = payee_to_api(renamed["payee"])
    return renamed


def _rewrite(model: Any, field: str, convert: Any) -> None:
    """Rewrite `field` of every row `convert` changes, a batch at a time."""
    changed = []
    rows = model.objects.exclude(**{f"{field}__isnull": True}).values_list("id", field)
    for row_id, value in rows.iterator(chunk_size=BATCH):
        converted = convert(value)
        if converted != value:
            changed.append(model(id=row_id, **{field: converted}))
        if len(changed) == BATCH:
            model.objects.bulk_update(changed, [field])
            changed = []
    if changed:
        model.objects.bulk_update(changed, [field])


def forward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps.get_model("payments", "PaymentRequest"), "payee", payee_to_domain)
    _rewrite(apps.get_model("payments", "ScheduledPayment"), "details", details_to_domain)


def backward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps.get_model("payments", "PaymentRequest"), "payee", payee_to_api)
    _rewrite(apps.get_model("payments", "ScheduledPayment"), "details", details_to_api)


class Migration(migrations.Migration):
    dependencies = [("payments", "0005_admin_names")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
