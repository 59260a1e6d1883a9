"""What an account may spend, its available balance: its balance less what its
open holds set aside (`Account.held`, the sum of its `payments.models.Hold`
rows still open). The one definition: the account (`Account.available`), the
payment decision's snapshot, the balances route's figure at a past moment and,
in SQL, the ledger's conditional UPDATE (`payments.decision.funds_sql`) all
take it from here."""

from decimal import Decimal


def available_balance(balance: Decimal, held: Decimal) -> Decimal:
    """What an account whose balance is `balance`, with `held` set aside, may spend."""
    return balance - held


def available_balance_sql(balance_column: str, held_column: str) -> str:
    """`available_balance` over an account row's columns."""
    return f"{balance_column} - {held_column}"
