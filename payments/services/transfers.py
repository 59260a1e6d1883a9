"""POST .../international-transfers: a payment converted through an FX quote (DESIGN 8)."""

import uuid

from bankapi.idempotency import OwnerKind, StoredResponse, idempotent_call
from bankapi.models import Account
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.create import MISMATCH_MESSAGE, payee_resolve


def international_transfer_submit(
    *, account: Account, data: dict, idempotency_key: uuid.UUID | None
) -> StoredResponse:
    """Accept a transfer paid in the quote's buy currency, at most once per
    Idempotency-Key. The quote is spent with the acceptance, in one transaction:
    a refused transfer leaves the quote usable until it expires."""
    beneficiary, payee = payee_resolve(account=account, data=data)
    instruction = PaymentInstruction(
        amount=None,
        currency="",
        reference=data["reference"],
        purpose=data.get("purpose", ""),
        charge_bearer=data.get("chargeBearer", ""),
        beneficiary=beneficiary,
        payee=payee,
        quote_id=data["quoteId"],
    )
    fingerprint = {
        "quoteId": str(data["quoteId"]),
        "accountId": str(account.id),
        "beneficiaryId": str(beneficiary.id) if beneficiary else None,
    }

    def work() -> StoredResponse:
        request = payment_accept(account=account, instruction=instruction)
        quote = request.fx_quote
        transfer = {
            "status": "success",
            "requestId": str(request.id),
            "quoteId": str(quote.id),
            "sellAmount": f"{request.debit_amount:.2f}",
            "sellCurrency": account.currency,
            "buyAmount": f"{request.amount:.2f}",
            "buyCurrency": request.currency,
            "rate": str(quote.rate.normalize()),
        }
        return StoredResponse.rendered(200, {"success": True, "data": {"internationalTransfer": transfer}})

    return idempotent_call(
        program=account.program,
        sandbox=account.sandbox,
        owner_kind=OwnerKind.CUSTOMER,
        owner_id=account.customer_id,
        operation="payments.international_transfer",
        key=idempotency_key,
        fingerprint=fingerprint,
        work=work,
        mismatch_message=MISMATCH_MESSAGE,
    )
