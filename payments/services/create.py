"""POST .../payments: from a validated body to an accepted payment (spec 2.1, 4.1)."""

import uuid
from datetime import UTC

from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Account
from payments.selectors import beneficiary_of
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.idempotency import StoredResponse, idempotent_call


def payment_instruction_build(*, account: Account, data: dict) -> PaymentInstruction:
    """Resolve the payee of a body validated by PaymentCreateSerializer.

    A beneficiary of another customer is not found (404), never a 400.
    """
    beneficiary = None
    payee = data.get("payee")
    if "beneficiaryId" in data:
        beneficiary = beneficiary_of(account.customer, data["beneficiaryId"])
        payee = beneficiary.payee_details()
        virtual_iban = data.get("virtualIban")
        if (
            virtual_iban
            and beneficiary.is_uk
            and data["currency"] == "GBP"
            and not virtual_iban.startswith("GB")
        ):
            raise validation_error("virtualIban", "A domestic GBP payment must come from a GB virtual IBAN.")
    return PaymentInstruction(
        amount=data["amount"],
        currency=data["currency"],
        reference=data["reference"],
        purpose=data.get("purpose", ""),
        charge_bearer=data.get("chargeBearer", ""),
        beneficiary=beneficiary,
        payee=payee,
        virtual_iban=data.get("virtualIban", ""),
        fee_waived=data.get("feeWaived", False),
    )


def created_response(
    *, request_id: uuid.UUID | None = None, schedule_id: uuid.UUID | None = None
) -> StoredResponse:
    transfer = {"status": "success"}
    if request_id:
        transfer["requestId"] = str(request_id)
    if schedule_id:
        transfer["scheduleId"] = str(schedule_id)
    return StoredResponse(status=200, body={"success": True, "data": {"bankTransfer": transfer}})


def payment_submit(*, account: Account, data: dict, idempotency_key: uuid.UUID | None) -> StoredResponse:
    """Accept a payment now (or, for a later day, schedule it), at most once per
    Idempotency-Key; a retry with the key answers the first response."""
    instruction = payment_instruction_build(account=account, data=data)
    fingerprint = {
        "amount": f"{data['amount']:.2f}",
        "accountId": str(account.id),
        "beneficiaryId": str(instruction.beneficiary.id) if instruction.beneficiary else None,
    }
    scheduled_date = data.get("scheduledDate")

    def work() -> StoredResponse:
        if scheduled_date and scheduled_date > timezone.now().astimezone(UTC).date():
            raise ApiError(
                ErrorCode.NOT_SUPPORTED, "Scheduling a payment for a later day is not available yet."
            )
        request = payment_accept(account=account, instruction=instruction)
        return created_response(request_id=request.id)

    return idempotent_call(customer=account.customer, key=idempotency_key, fingerprint=fingerprint, work=work)
