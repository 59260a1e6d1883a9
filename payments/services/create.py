"""POST .../payments: from a validated body to an accepted or scheduled payment (spec 2.1, 3.2, 4.1)."""

import uuid

from bankapi.errors import validation_error
from bankapi.idempotency import OwnerKind, StoredResponse, idempotent_call
from bankapi.models import Account
from payments.models import Beneficiary, ScheduledPayment
from payments.selectors import beneficiary_of
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.schedules import schedule_create, utc_today

MISMATCH_MESSAGE = (
    "This Idempotency-Key was used for a different payment (amount, accountId or beneficiaryId)."
)


def payee_resolve(*, account: Account, data: dict) -> tuple[Beneficiary | None, dict | None]:
    """The beneficiary (the customer's own, else 404) and the payee as paid."""
    if "beneficiaryId" not in data:
        return None, data.get("payee")
    beneficiary = beneficiary_of(account.customer, data["beneficiaryId"])
    return beneficiary, beneficiary.payee_details()


def payment_instruction_build(*, account: Account, data: dict) -> PaymentInstruction:
    """The instruction of a body validated by PaymentCreateSerializer.

    A beneficiary of another customer is not found (404), never a 400.
    """
    beneficiary, payee = payee_resolve(account=account, data=data)
    virtual_iban = data.get("virtualIban", "")
    if virtual_iban and beneficiary and beneficiary.is_uk and data["currency"] == "GBP":
        if not virtual_iban.startswith("GB"):
            raise validation_error("virtualIban", "A domestic GBP payment must come from a GB virtual IBAN.")
    crypto_quote = data.get("cryptoQuote")
    return PaymentInstruction(
        amount=data["amount"],
        currency=data.get("currency", ""),
        reference=data["reference"],
        purpose=data.get("purpose", ""),
        charge_bearer=data.get("chargeBearer", ""),
        beneficiary=beneficiary,
        payee=payee,
        virtual_iban=virtual_iban,
        fee_waived=data.get("feeWaived", False),
        quote_id=crypto_quote["quoteId"] if crypto_quote else None,
    )


def created_response(
    *, request_id: uuid.UUID | None = None, schedule_id: uuid.UUID | None = None
) -> StoredResponse:
    transfer = {"status": "success"}
    if request_id:
        transfer["requestId"] = str(request_id)
    if schedule_id:
        transfer["scheduleId"] = str(schedule_id)
    return StoredResponse.rendered(200, {"success": True, "data": {"bankTransfer": transfer}})


def payment_submit(*, account: Account, data: dict, idempotency_key: uuid.UUID | None) -> StoredResponse:
    """Accept a payment now, or for a later day schedule it, at most once per
    Idempotency-Key: a retry with the key answers the first response."""
    instruction = payment_instruction_build(account=account, data=data)
    fingerprint = {
        "amount": f"{data['amount']:.2f}",
        "accountId": str(account.id),
        "beneficiaryId": str(instruction.beneficiary.id) if instruction.beneficiary else None,
    }
    scheduled_date = data.get("scheduledDate")
    frequency = data.get("frequency", ScheduledPayment.Frequency.NEVER)

    def work() -> StoredResponse:
        today = utc_today()
        if scheduled_date and scheduled_date > today:
            schedule = schedule_create(
                account=account, instruction=instruction, anchor=scheduled_date, frequency=frequency
            )
            return created_response(schedule_id=schedule.id)
        # Today or earlier pays at once, as if scheduledDate were omitted (spec
        # 3.2); a repeating frequency then goes on from today.
        request = payment_accept(account=account, instruction=instruction)
        if frequency == ScheduledPayment.Frequency.NEVER:
            return created_response(request_id=request.id)
        schedule = schedule_create(
            account=account, instruction=instruction, anchor=today, frequency=frequency, first_payment=request
        )
        return created_response(request_id=request.id, schedule_id=schedule.id)

    return idempotent_call(
        program=account.program,
        sandbox=account.sandbox,
        owner_kind=OwnerKind.CUSTOMER,
        owner_id=account.customer_id,
        operation="payments.create",
        key=idempotency_key,
        fingerprint=fingerprint,
        work=work,
        mismatch_message=MISMATCH_MESSAGE,
    )
