"""Returns: a settled payment the payee's bank sent back.

One service for every door (the sandbox route, the back office's action). A
return is a movement of its own through the ledger (kind RETURN, keyed per
request so it is posted once whatever races it): the outside world gives the
amount back and the payer's account is credited with what left it for the
payment, the fee excepted (the service was given). The day's used limit stays
as it was: the money did leave that day.
"""

from django.db import transaction

from bankapi.models import ZERO
from events.models import EventType
from payments.events import payment_request_event
from payments.ledger import Leg, RequestRef, ledger_post_once, statement_entry_credit, system_account_for
from payments.models import LedgerPosting, LedgerTransaction, PaymentRequest, SystemAccount
from payments.services.settlement import locked_request

# The ISO 20022 return reason codes (ExternalReturnReason1Code) a return may carry.
RETURN_REASON_CODES: dict[str, str] = {
    "AC01": "Incorrect account number",
    "AC04": "Closed account number",
    "AC06": "Blocked account",
    "AG01": "Transaction forbidden on this type of account",
    "AM05": "Duplication",
    "BE04": "Missing creditor address",
    "MD07": "End customer deceased",
    "MS02": "Not specified reason, customer generated",
    "MS03": "Not specified reason, agent generated",
    "RC01": "Bank identifier incorrect",
    "RR04": "Regulatory reason",
}


def _kind(posting: LedgerPosting) -> str | None:
    """The kind of system account a posting moves (None: a customer account's)."""
    return posting.system_account.kind if posting.system_account else None


def _return_legs(request: PaymentRequest) -> list[Leg]:
    """The payment's acceptance postings given back as a reversal gives them
    back (each negated), but for what stays where it went: the fee (its
    postings are left out, and the payer's credit is less them). The payee's
    amount comes back from outside, where settlement moved it from clearing.
    A converted payment's FX legs are undone with the rest, so each currency
    still balances."""
    postings = list(request.acceptance.postings.select_related("account", "system_account").order_by("id"))
    fee = sum((posting.amount for posting in postings if _kind(posting) == SystemAccount.Kind.FEES), ZERO)
    legs = []
    for posting in postings:
        kind = _kind(posting)
        if kind == SystemAccount.Kind.FEES:
            continue
        system = posting.system_account
        if kind == SystemAccount.Kind.CLEARING:
            system = system_account_for(
                request.program_id, request.sandbox, SystemAccount.Kind.EXTERNAL, posting.currency
            )
        legs.append(
            Leg(
                amount=-posting.amount - (fee if posting.account is not None else ZERO),
                currency=posting.currency,
                account=posting.account,
                system_account=system,
            )
        )
    return legs


def payment_return(request: PaymentRequest, reason_code: str) -> PaymentRequest:
    """SETTLED -> RETURNED: the payer's account is credited with the payment's
    amount (not the fee), booked on its statement as a credit naming the
    returned request, and `payment_request.returned` is recorded. Only a
    settled request returns, and once: otherwise 409 INVALID_STATE."""
    if reason_code not in RETURN_REASON_CODES:
        raise ValueError(f"Not a return reason code: {reason_code!r}")
    with transaction.atomic():
        # The request's row lock serialises two returns (or a return and
        # anything else) of one request; the ledger key would refuse a second
        # movement even without it.
        locked = locked_request(request, [PaymentRequest.Status.SETTLED], "returned")
        entry = ledger_post_once(
            program_id=locked.program_id,
            sandbox=locked.sandbox,
            kind=LedgerTransaction.Kind.RETURN,
            key=f"return:{locked.id}",
            memo=reason_code,
            request=RequestRef(id=locked.id, reference=locked.reference),
            legs=_return_legs(locked),
        )
        update_fields = ["status", "updated_at"]
        if entry is not None:
            # Names the request on the account's statement, as a reversal does.
            locked.return_movement = entry
            update_fields.append("return_movement")
            statement_entry_credit(
                locked.account, entry, locked.debit_amount, locked.reference, returned=locked
            )
        locked.status = PaymentRequest.Status.RETURNED
        locked.save(update_fields=update_fields)
        payment_request_event(locked, EventType.PAYMENT_REQUEST_RETURNED)
        return locked
