"""Payment creation: a payment accepted now, a schedule for a later day, or both.

The route runs it in two steps under its Idempotency-Key (its fingerprint,
`payment_fingerprint`, is read from the body alone):
`payment_instruction_build` resolves and checks the instruction (a beneficiary
not found: 404, a rule broken: 400; it only reads), then `payment_submit` pays
or schedules it. On PostgreSQL a payment made now is accepted in one statement
that also writes the key's record (`payment_submit_at_once`). A refusal in
either step leaves the key free; a duplicate sent meanwhile answers the first
answer once that statement has committed (409 while a claimed key's work runs),
one sent after the payment its answer, whatever has changed since.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from bankapi.errors import validation_error
from bankapi.idempotency import Fingerprint, FirstUse, StoredResponse
from bankapi.models import Account
from bankapi.scope import parse_uuid
from bankapi.tenancy import OWNED_BY_CUSTOMER
from payments.models import Beneficiary, PaymentRequest, ScheduledPayment
from payments.payees import Payee
from payments.rules import virtual_iban_error
from payments.selectors import beneficiary_of
from payments.services.acceptance import PaymentInstruction, payment_accept, payment_accept_at_once
from payments.services.schedules import schedule_create, utc_today

OPERATION = "payments.create"
MISMATCH_MESSAGE = (
    "This Idempotency-Key was used for a different payment (amount, accountId or beneficiaryId)."
)


@dataclass(frozen=True)
class PaymentSubmission:
    """What a payment create did: the payment accepted today, the schedule made
    for later days, or both (a repeating payment whose first run is today)."""

    payment_request: PaymentRequest | None = None
    schedule: ScheduledPayment | None = None


def payee_resolve(
    *,
    account: Account,
    beneficiary_id: str | None,
    payee: Payee | None,
    beneficiary_read: Beneficiary | None = None,
) -> tuple[Beneficiary | None, Payee | None]:
    """The beneficiary (the account's customer's own, else 404) and the payee as paid.

    `beneficiary_read` is a beneficiary already read for this request (with the
    caller, see `bankapi.http.api.AccountScopedView`), used when it is the one named
    and the rule of `beneficiary_of` gives it; otherwise it is read by that rule."""
    if beneficiary_id is None:
        return None, payee
    owner = {"customer": account.customer}
    if (
        beneficiary_read is not None
        and parse_uuid(beneficiary_id) == beneficiary_read.id
        and OWNED_BY_CUSTOMER.holds(beneficiary_read, None, owner)
    ):
        beneficiary = beneficiary_read
    else:
        beneficiary = beneficiary_of(account.customer, beneficiary_id)
    return beneficiary, beneficiary.payee()


def payment_instruction_build(
    *,
    account: Account,
    amount: Decimal,
    currency: str,
    reference: str,
    purpose: str = "",
    charge_bearer: str = "",
    beneficiary_id: str | None = None,
    payee: Payee | None = None,
    virtual_iban: str = "",
    fee_waived: bool = False,
    quote_id: uuid.UUID | None = None,
    beneficiary_read: Beneficiary | None = None,
) -> PaymentInstruction:
    """What to pay, with its payee resolved: exactly one of `beneficiary_id`,
    `payee` (inline) or `quote_id` (crypto-funded) names where the money goes.

    A beneficiary of another customer is not found (404), never a 400.
    `beneficiary_read`: see `payee_resolve`.
    """
    beneficiary, payee_as_paid = payee_resolve(
        account=account,
        beneficiary_id=beneficiary_id,
        payee=payee,
        beneficiary_read=beneficiary_read,
    )
    error = virtual_iban_error(virtual_iban=virtual_iban, currency=currency, payee=payee_as_paid)
    if error:
        raise validation_error("virtualIban", error)
    return PaymentInstruction(
        amount=amount,
        currency=currency,
        reference=reference,
        purpose=purpose,
        charge_bearer=charge_bearer,
        beneficiary=beneficiary,
        payee=payee_as_paid,
        virtual_iban=virtual_iban,
        fee_waived=fee_waived,
        quote_id=quote_id,
    )


def payment_fingerprint(*, account: Account, amount: Decimal, beneficiary_id: str | None) -> Fingerprint:
    """What an Idempotency-Key is bound to: amount, account and beneficiary, the
    beneficiary as the body names it (it is looked up only once the key is held)."""
    amount_text, account_id, beneficiary = f"{amount:.2f}", str(account.id), beneficiary_key(beneficiary_id)
    return Fingerprint(
        {"amount": amount_text, "account_id": account_id, "beneficiary_id": beneficiary},
        # Records written before fingerprints had a version used the body's names.
        earlier={None: {"amount": amount_text, "accountId": account_id, "beneficiaryId": beneficiary}},
    )


def beneficiary_key(beneficiary_id: str | None) -> str | None:
    """A body's beneficiaryId as a fingerprint keeps it: the UUID it names
    (spelt as stored), or the text when it names none."""
    if beneficiary_id is None:
        return None
    parsed = parse_uuid(beneficiary_id)
    return str(parsed) if parsed is not None else beneficiary_id


def payment_submit(
    *,
    account: Account,
    instruction: PaymentInstruction,
    scheduled_date: date | None = None,
    frequency: str = ScheduledPayment.Frequency.NEVER,
) -> PaymentSubmission:
    """Accept the payment now, or for a later UTC day schedule it.

    Today or earlier pays at once, as if `scheduled_date` were omitted;
    a repeating frequency then goes on from today. Raises ApiError (4xx) when the
    payment is stopped; nothing is then written.
    """
    today = utc_today(account.customer_id)
    if scheduled_date and scheduled_date > today:
        schedule = schedule_create(
            account=account, instruction=instruction, anchor=scheduled_date, frequency=frequency
        )
        return PaymentSubmission(schedule=schedule)
    request = payment_accept(account=account, instruction=instruction)
    if frequency == ScheduledPayment.Frequency.NEVER:
        return PaymentSubmission(payment_request=request)
    schedule = schedule_create(
        account=account, instruction=instruction, anchor=today, frequency=frequency, first_payment=request
    )
    return PaymentSubmission(payment_request=request, schedule=schedule)


def payment_submit_at_once(
    *,
    account: Account,
    instruction: PaymentInstruction,
    scheduled_date: date | None,
    frequency: str,
    claim: FirstUse | None,
    rendered: Callable[[PaymentSubmission], StoredResponse],
) -> tuple[PaymentSubmission, StoredResponse] | None:
    """`payment_submit` of a payment made now and not repeated, accepted in one
    statement with its idempotency key's record (`claim`, the key's first use;
    `payment_accept_at_once`): the submission and its answer (`rendered`). None
    when nothing was written and `payment_submit` decides (a schedule, a
    repeating payment, or any case `payment_accept_at_once` leaves to it)."""
    if frequency != ScheduledPayment.Frequency.NEVER or (
        scheduled_date and scheduled_date > utc_today(account.customer_id)
    ):
        return None
    done = payment_accept_at_once(
        account=account,
        instruction=instruction,
        claim=claim,
        respond=lambda request: rendered(PaymentSubmission(payment_request=request)),
    )
    if done is None:
        return None
    request, response = done
    return PaymentSubmission(payment_request=request), response
