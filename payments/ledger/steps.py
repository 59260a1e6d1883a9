"""A payment's movement as steps of one larger statement (PostgreSQL): the
account's conditional UPDATE and the INSERTs of the movement and its postings,
each written only if the UPDATE returned its row, under the rules `ledger_post`
keeps."""

import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bankapi.models import ZERO, Account
from bankapi.row_objects import row_new
from bankapi.rows import insert_select_sql, rows_pre_save, rows_stored
from payments.formats import CENT
from payments.ledger.balances import Applied, applied_show, balance_statement, moment
from payments.ledger.legs import Leg, Outbound, RequestRef, movement_changes, movement_now
from payments.ledger.statement_lines import leg_posting
from payments.models import LedgerPosting, LedgerTransaction


@dataclass
class PostingSteps:
    """A movement as steps of one larger statement (PostgreSQL), for a writer that
    sends its other writes with it (`ledger_post_steps`): `debit`, the account's
    conditional UPDATE (`RETURNING` its balance and booking time), then
    `writes`, the movement and its postings, each an INSERT that writes only if
    the debit returned its row. Call `stored` with what the debit returned."""

    debit: tuple[str, list[Any]]
    writes: list[tuple[str, list[Any]]]
    entry: LedgerTransaction
    postings: list[LedgerPosting]
    account: Account

    def stored(self, balance: Any, booked_at: Any, connection: Any) -> None:
        """The statement debited the account: show its new balance on the
        caller's Account object, and its rows as saved."""
        applied = Applied(
            balance=Decimal(str(balance)).quantize(CENT), booked_at=moment(booked_at, connection)
        )
        applied_show(self.account, applied)
        for posting in self.postings:
            if posting.account_id is not None:
                posting.balance_after, posting.created_at = applied.balance, applied.booked_at
        rows_stored([self.entry, *self.postings], connection)


def ledger_post_steps(
    *,
    program_id: uuid.UUID,
    sandbox: bool,
    kind: str,
    legs: list[Leg],
    memo: str,
    outbound: Outbound,
    request: RequestRef,
    debit: str,
    connection: Any,
) -> PostingSteps | None:
    """`ledger_post` of a payment's movement as steps of one statement named
    `debit` for its UPDATE (see `PostingSteps`), written under the same rules:
    the same conditional UPDATE, and each
    customer posting's balance and booking time taken from what it returned.
    None when the movement has another shape than a payment's (exactly one leg
    on a customer account, the one `outbound` counts): `ledger_post` writes those."""
    changes = movement_changes(legs, outbound)
    customer_legs = [leg for leg in legs if leg.account is not None]
    if len(customer_legs) != 1 or list(changes) != [outbound.account_id]:
        return None
    account = customer_legs[0].account
    assert account is not None
    now = movement_now(legs)
    name = connection.ops.quote_name
    entry = row_new(LedgerTransaction, program_id=program_id, sandbox=sandbox, kind=kind, memo=memo[:200])
    # The customer posting's balance and booking time are the debit's: written
    # from its returned row (placeholders until then).
    placeholder = {account.id: ZERO}
    postings = [leg_posting(entry, leg, dict(placeholder), {account.id: now}, now, request) for leg in legs]
    rows_pre_save([entry, *postings])
    from_debit = {
        "balance_after": f"{name(debit)}.{name('balance')}",
        "created_at": f"{name(debit)}.{name('last_booked_at')}",
    }
    return PostingSteps(
        debit=balance_statement(connection, account.id, changes[account.id], now, outbound),
        writes=[
            insert_select_sql([entry], name(debit), connection),
            insert_select_sql(
                postings,
                name(debit),
                connection,
                computed=[from_debit if posting.account_id is not None else {} for posting in postings],
            ),
        ],
        entry=entry,
        postings=postings,
        account=account,
    )
