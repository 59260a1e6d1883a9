"""The customer-facing statement entries (the transactions list): written here
only, in the transaction of the movement they book and pointing at it, so the
ledger stays the source of truth and this is its view.

Five movements are booked as entries: a funding (a credit), a settlement (the
payment's debit and, apart, its fee), a return (a credit naming the returned
request), an incoming payment (a credit naming it) and a card authorization's
clearing (a debit naming the authorization). Settlement and clearing book a
whole chunk in one INSERT.
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from bankapi.models import Account
from payments.formats import REFERENCE_MAX
from payments.models import IncomingPayment, LedgerTransaction, PaymentRequest, StatementEntry

FEE_REFERENCE = "Payment fee"


@dataclass(frozen=True)
class Settled:
    """A payment request settled by `entry` (its SETTLEMENT movement), with the
    currency of its account (what left the account is in that currency)."""

    request: PaymentRequest
    entry: LedgerTransaction
    account_currency: str


def statement_entries_settled(settled: Iterable[Settled]) -> None:
    """Book settled payments on their accounts' statements, in one INSERT: each
    its debit (what left the account for it) and, when it paid one, its fee."""
    rows: list[StatementEntry] = []
    for item in settled:
        request = item.request
        lines = [(request.debit_amount, request.reference)]
        if request.fee:
            lines.append((request.fee, FEE_REFERENCE))
        rows.extend(
            StatementEntry(
                program_id=request.program_id,
                sandbox=request.sandbox,
                account_id=request.account_id,
                ledger_transaction=item.entry,
                payment_request=request,
                direction=StatementEntry.Direction.DEBIT,
                amount=amount,
                currency=item.account_currency,
                reference=reference,
            )
            for amount, reference in lines
        )
    StatementEntry.objects.bulk_create(rows, batch_size=2000)


def statement_entry_credit(
    account: Account,
    entry: LedgerTransaction,
    amount: Decimal,
    reference: str,
    *,
    returned: PaymentRequest | None = None,
    incoming: IncomingPayment | None = None,
) -> StatementEntry:
    """Book a credit to `account` (a funding, the return of the settled
    request `returned`, or the money of `incoming` from another bank) on its
    statement."""
    return StatementEntry.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        account=account,
        ledger_transaction=entry,
        payment_request=returned,
        return_of=returned,
        incoming_payment=incoming,
        direction=StatementEntry.Direction.CREDIT,
        amount=amount,
        currency=account.currency,
        reference=reference[:REFERENCE_MAX],
    )


@dataclass(frozen=True)
class CardCleared:
    """A card authorization's clearing: `amount` paid from `account` by the
    movement `entry`, to the merchant `reference` names."""

    account: Account
    entry: LedgerTransaction
    amount: Decimal
    reference: str
    authorization_id: uuid.UUID


def statement_entries_card_cleared(cleared: Iterable[CardCleared]) -> None:
    """Book card clearings on their accounts' statements, in one INSERT: each a
    debit naming its authorization."""
    StatementEntry.objects.bulk_create(
        (
            StatementEntry(
                program_id=item.account.program_id,
                sandbox=item.account.sandbox,
                account=item.account,
                ledger_transaction=item.entry,
                card_authorization_id=item.authorization_id,
                direction=StatementEntry.Direction.DEBIT,
                amount=item.amount,
                currency=item.account.currency,
                reference=item.reference[:REFERENCE_MAX],
            )
            for item in cleared
        ),
        batch_size=2000,
    )
