"""International transfers: a payment converted through an FX quote.

As for payments, the route claims the Idempotency-Key (fingerprint from the
body), then builds the instruction (payee resolved: 404) and submits it.
"""

import uuid

from bankapi.idempotency import Fingerprint
from bankapi.models import Account
from payments.models import PaymentRequest
from payments.payees import Payee
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.create import beneficiary_key, payee_resolve

OPERATION = "payments.international_transfer"


def international_transfer_instruction_build(
    *,
    account: Account,
    quote_id: uuid.UUID,
    reference: str,
    purpose: str = "",
    charge_bearer: str = "",
    beneficiary_id: str | None = None,
    payee: Payee | None = None,
) -> PaymentInstruction:
    """A transfer paid in the quote's buy currency to a saved beneficiary or an
    inline payee; its amounts come from the quote."""
    beneficiary, payee_as_paid = payee_resolve(account=account, beneficiary_id=beneficiary_id, payee=payee)
    return PaymentInstruction(
        amount=None,
        currency="",
        reference=reference,
        purpose=purpose,
        charge_bearer=charge_bearer,
        beneficiary=beneficiary,
        payee=payee_as_paid,
        quote_id=quote_id,
    )


def international_transfer_fingerprint(
    *, account: Account, quote_id: uuid.UUID, beneficiary_id: str | None
) -> Fingerprint:
    """What an Idempotency-Key is bound to: quote, account and beneficiary, the
    beneficiary as the body names it."""
    quote, account_id, beneficiary = str(quote_id), str(account.id), beneficiary_key(beneficiary_id)
    return Fingerprint(
        {"quote_id": quote, "account_id": account_id, "beneficiary_id": beneficiary},
        # Records written before fingerprints had a version used the body's names.
        earlier={None: {"quoteId": quote, "accountId": account_id, "beneficiaryId": beneficiary}},
    )


def international_transfer_submit(*, account: Account, instruction: PaymentInstruction) -> PaymentRequest:
    """Accept the transfer. The quote is spent with the acceptance, in one
    transaction: a refused transfer leaves the quote usable until it expires."""
    return payment_accept(account=account, instruction=instruction)
