"""What a customer posting's statement line says: kind, payment request,
reference and description, written with the posting in the same INSERT, so a
statement reads the postings alone (and `ledger_check` compares them)."""

import uuid
from datetime import datetime
from decimal import Decimal

from bankapi.row_objects import row_new
from payments.formats import REFERENCE_MAX
from payments.ledger.legs import Counterparty, Leg, RequestRef
from payments.models import LedgerPosting, LedgerTransaction

_KIND_LABELS = {kind.value: str(kind.label) for kind in LedgerTransaction.Kind}


def statement_description(kind: str, memo: str, has_request: bool) -> str:
    """What a posting of a movement was, in words, as its statement line says it.
    (A PAYMENT or REVERSAL that names no request is a batch's funding booked
    before funding became a hold: such entries stay in old statements.)"""
    if kind == LedgerTransaction.Kind.PAYMENT:
        return "Payment" if has_request else "Funds reserved for batch payments"
    if kind == LedgerTransaction.Kind.REVERSAL:
        return f"Payment failed: {memo}" if has_request else "Reserved funds released"
    if kind == LedgerTransaction.Kind.RETURN:
        return f"Payment returned: {memo}"
    return _KIND_LABELS.get(kind, kind)


def statement_line_facts(
    kind: str, memo: str, request_id: uuid.UUID | None, request_reference: str | None
) -> tuple[str, uuid.UUID | None, str, str]:
    """(kind, request id, reference, description) of a customer posting of a
    movement of `kind` with `memo` (as stored: at most 200 characters), booking
    the payment request `request_id` (None when it books none): the reference
    is the request's, or the memo, cut to REFERENCE_MAX."""
    reference = (request_reference or memo)[:REFERENCE_MAX]
    return kind, request_id, reference, statement_description(kind, memo, request_id is not None)


def leg_posting(
    entry: LedgerTransaction,
    leg: Leg,
    running: dict[uuid.UUID, Decimal],
    booked: dict[uuid.UUID, datetime],
    now: datetime,
    request: RequestRef | None,
    counterparty: Counterparty | None = None,
) -> LedgerPosting:
    """The posting of one leg in the ledger transaction `entry`. A customer
    account's posting carries the account's balance after it (`running` holds
    each account's balance so far, read under its lock, and moves on by the leg)
    and is booked at the account's booking time (`booked`, see
    `Account.last_booked_at`); a system account's is booked `now`. A customer
    posting also carries its statement line (`statement_line_facts`) and the
    movement's `counterparty`, if it names one."""
    if leg.account is None:
        return row_new(
            LedgerPosting,
            transaction=entry,
            system_account=leg.system_account,
            currency=leg.currency,
            amount=leg.amount,
            created_at=now,
        )
    balance_after = running[leg.account.id] = running[leg.account.id] + leg.amount
    kind, request_id, reference, description = statement_line_facts(
        entry.kind, entry.memo, request.id if request else None, request.reference if request else None
    )
    return row_new(
        LedgerPosting,
        transaction=entry,
        account=leg.account,
        currency=leg.currency,
        amount=leg.amount,
        balance_after=balance_after,
        created_at=booked[leg.account.id],
        kind=kind,
        request_id=request_id,
        reference=reference,
        description=description,
        end_to_end_id=counterparty.end_to_end_id if counterparty else "",
        counterparty_name=counterparty.name if counterparty else "",
        counterparty_iban=counterparty.iban if counterparty else "",
    )
