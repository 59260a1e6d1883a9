"""`bootstrap_sandbox`, batch part: the custodian it prints.

The kernel step makes the custodian, its two client customers and their GBP
accounts; this step checks they are fit for batch payments and adds the
custodian's `name` (what management listings show as custodianName).
"""

from bankapi.models import Account
from bankapi.sandbox import SandboxContext


def bootstrap(ctx: SandboxContext) -> None:
    custodian = ctx.objects["custodian"]
    output = ctx.output["custodian"]
    for entry in output["accounts"]:
        account = Account.objects.select_related("customer").get(id=entry["accountId"])
        # Batch payers are found by sort code and account number: both must be set.
        if account.customer.custodian_id != custodian.id or not (
            account.sort_code and account.account_number
        ):
            raise RuntimeError(f"Custodian account {account.id} cannot pay batches")
    output["name"] = custodian.name
