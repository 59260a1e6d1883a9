"""`bootstrap_sandbox`, payments part: opening balances, posted through the
ledger, and a saved beneficiary for each sandbox customer."""

from bankapi.sandbox import SandboxContext
from payments.ledger import ledger_fund_account
from payments.models import Beneficiary

BENEFICIARY_NAME = "Sandbox Payee"
BENEFICIARY_SORT_CODE = "040004"
BENEFICIARY_ACCOUNT_NUMBER = "12345678"


def sandbox_beneficiary(customer) -> Beneficiary:
    """The customer's saved sandbox beneficiary, made once."""
    beneficiary, _ = Beneficiary.objects.get_or_create(
        customer=customer,
        name=BENEFICIARY_NAME,
        defaults={
            "program_id": customer.program_id,
            "sandbox": customer.sandbox,
            "account_kind": Beneficiary.AccountKind.UK,
            "sort_code": BENEFICIARY_SORT_CODE,
            "account_number": BENEFICIARY_ACCOUNT_NUMBER,
        },
    )
    return beneficiary


def sandbox_fund(ctx: SandboxContext) -> None:
    """Post each sandbox account's opening balance through the ledger (the
    bootstrap's accounts and the customers made on demand alike)."""
    for account, balance in ctx.funding:
        # Keyed per account: the opening balance is posted once, whatever reruns.
        ledger_fund_account(
            account, balance, key=f"sandbox-opening:{account.id}", memo="Sandbox opening balance"
        )


def bootstrap(ctx: SandboxContext) -> None:
    sandbox_fund(ctx)
    for key in ("customer", "customer2", "business"):
        ctx.output[key]["beneficiaryId"] = str(sandbox_beneficiary(ctx.objects[key]).id)
