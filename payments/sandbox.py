"""`bootstrap_sandbox`, payments part: opening balances, posted through the ledger."""

from bankapi.sandbox import SandboxContext
from payments.ledger import ledger_fund_account


def bootstrap(ctx: SandboxContext) -> None:
    for account, balance in ctx.funding:
        # Keyed per account: the opening balance is posted once, whatever reruns.
        ledger_fund_account(
            account, balance, key=f"sandbox-opening:{account.id}", memo="Sandbox opening balance"
        )
