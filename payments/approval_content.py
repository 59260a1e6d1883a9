"""A payment (or a scheduled payment's creation) as an approval holds it.

`payment_hold_request` describes a payment the route is about to make: the
content approvers sign, the amount the policy compares, and the request as
parsed (`replay`). `payment_from_replay` rebuilds that request when the last
approval comes, through the same `payment_instruction_build` the route calls,
so the payee is resolved and checked again then. The two share this module so
that the stored form has one definition.
"""

import uuid
from datetime import date
from decimal import Decimal
from typing import Any

from bankapi.approval_gate import (
    PAYMENT,
    SCHEDULE,
    Hold,
    HoldRequest,
    approval_needed,
    policy_owner_of_account,
)
from bankapi.models import Account
from payments.models import ScheduledPayment
from payments.payees import IbanAccount, Payee, UkAccount
from payments.services.acceptance import PaymentInstruction
from payments.services.create import payment_instruction_build
from payments.services.schedules import utc_today


def payee_content(payee: Payee | None) -> dict[str, Any] | None:
    """`{name, accountNumber, sortCode, iban, bic}` as paid, absent parts null."""
    if payee is None:
        return None
    account = payee.account
    uk = account if isinstance(account, UkAccount) else None
    iban = account if isinstance(account, IbanAccount) else None
    return {
        "name": payee.name,
        "accountNumber": uk.account_number if uk else None,
        "sortCode": uk.sort_code if uk else None,
        "iban": iban.iban if iban else None,
        "bic": (iban.bic or None) if iban else None,
    }


def is_schedule(scheduled_date: date | None, frequency: str, customer_id: uuid.UUID | None = None) -> bool:
    """Whether the create makes a schedule (a later day for the customer, or a repeating payment)."""
    later = scheduled_date is not None and scheduled_date > utc_today(customer_id)
    return later or frequency != ScheduledPayment.Frequency.NEVER


def payment_content(
    *, account: Account, instruction: PaymentInstruction, scheduled_date: date | None, frequency: str
) -> dict[str, Any]:
    amount = instruction.amount if instruction.amount is not None else Decimal(0)
    content: dict[str, Any] = {
        "kind": SCHEDULE if is_schedule(scheduled_date, frequency, account.customer_id) else PAYMENT,
        "accountId": str(account.id),
        "amount": f"{amount:.2f}",
        "currency": instruction.currency or account.currency,
        "reference": instruction.reference,
        "payee": payee_content(instruction.payee),
    }
    if content["kind"] == SCHEDULE:
        content["scheduledDate"] = scheduled_date.isoformat() if scheduled_date else None
        content["frequency"] = frequency
    return content


def payment_hold_request(
    *,
    account: Account,
    user_id: uuid.UUID,
    instruction: PaymentInstruction,
    beneficiary_id: str | None,
    inline_payee: Payee | None,
    scheduled_date: date | None,
    frequency: str,
) -> HoldRequest | None:
    """The payment as the approval gate sees it; None when no policy can apply
    (see `policy_owner_of_account`) or the payment is funded by an FX quote
    (which lives 30 seconds: like an international transfer, never held)."""
    owner = policy_owner_of_account(account)
    if owner is None or instruction.quote_id is not None or instruction.amount is None:
        return None
    content = payment_content(
        account=account, instruction=instruction, scheduled_date=scheduled_date, frequency=frequency
    )
    return HoldRequest(
        kind=content["kind"],
        program_id=account.program_id,
        sandbox=account.sandbox,
        initiator_id=user_id,
        customer_id=owner[0],
        custodian_id=owner[1],
        content=content,
        totals={content["currency"]: instruction.amount},
        replay={
            "accountId": str(account.id),
            "amount": str(instruction.amount),
            "currency": instruction.currency,
            "reference": instruction.reference,
            "purpose": instruction.purpose,
            "chargeBearer": instruction.charge_bearer,
            "beneficiaryId": beneficiary_id,
            "payee": inline_payee.to_stored() if inline_payee is not None else None,
            "virtualIban": instruction.virtual_iban,
            "feeWaived": instruction.fee_waived,
            "scheduledDate": scheduled_date.isoformat() if scheduled_date else None,
            "frequency": frequency,
        },
    )


def payment_hold(
    *, account: Account, user_id: uuid.UUID, instruction: PaymentInstruction, body: dict[str, Any]
) -> Hold | None:
    """The payment route's question to the approval gate: does the policy hold
    this create (`body` as the route validated it)?"""
    beneficiary_id = body.get("beneficiaryId")
    request = payment_hold_request(
        account=account,
        user_id=user_id,
        instruction=instruction,
        beneficiary_id=beneficiary_id,
        inline_payee=instruction.payee if beneficiary_id is None else None,
        scheduled_date=body.get("scheduledDate"),
        frequency=body.get("frequency", ScheduledPayment.Frequency.NEVER),
    )
    return approval_needed(request) if request is not None else None


def payment_from_replay(replay: dict[str, Any]) -> tuple[Account, PaymentInstruction, date | None, str]:
    """The held request again, its payee resolved now (a beneficiary deleted since: 404):
    (account, instruction, scheduled date, frequency)."""
    account = Account.objects.select_related("program", "customer").get(id=replay["accountId"])
    instruction = payment_instruction_build(
        account=account,
        amount=Decimal(replay["amount"]),
        currency=replay["currency"],
        reference=replay["reference"],
        purpose=replay["purpose"],
        charge_bearer=replay["chargeBearer"],
        beneficiary_id=replay["beneficiaryId"],
        payee=Payee.from_stored(replay["payee"]) if replay["payee"] is not None else None,
        virtual_iban=replay["virtualIban"],
        fee_waived=replay["feeWaived"],
    )
    scheduled = date.fromisoformat(replay["scheduledDate"]) if replay["scheduledDate"] else None
    return account, instruction, scheduled, replay["frequency"]
