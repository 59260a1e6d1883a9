"""Payment acceptance: the one place where a payment is checked and debited.

Called by the payment route, the schedule runner and (later) admin and batches.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, time
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode
from bankapi.models import ZERO, Account, Program
from payments.ledger import Leg, ledger_post, lock_accounts, system_account_for
from payments.models import Beneficiary, LedgerTransaction, PaymentRequest, ScheduledPayment, SystemAccount


@dataclass(frozen=True)
class PaymentInstruction:
    """What to pay, already validated against the account (see payments.serializers).

    `payee` is the payee as paid (`{name, account, accountType?}`): the beneficiary's
    details when `beneficiary` is set, the inline payee otherwise, None when the
    payment is funded by a quote without a payee (crypto).
    """

    amount: Decimal
    currency: str
    reference: str
    purpose: str = ""
    charge_bearer: str = ""
    beneficiary: Beneficiary | None = None
    payee: dict | None = None
    virtual_iban: str = ""
    fee_waived: bool = False


def utc_day_start(moment: datetime) -> datetime:
    return datetime.combine(moment.astimezone(UTC).date(), time.min, tzinfo=UTC)


def _check_limits(program: Program, account: Account, debit: Decimal) -> None:
    if debit > program.per_payment_limit:
        raise ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The amount is above the per-payment limit of {program.per_payment_limit:.2f}.",
        )
    # Today's (UTC) accepted payments of this account that still stand. Read under
    # the account lock taken by the caller, so two concurrent payments cannot both
    # fit under the limit that only one of them fits under.
    spent = (
        PaymentRequest.objects.filter(account=account, created_at__gte=utc_day_start(timezone.now()))
        .exclude(status=PaymentRequest.Status.FAILED)
        .aggregate(total=Sum("debit_amount"))["total"]
        or ZERO
    )
    if spent + debit > program.daily_outbound_limit:
        raise ApiError(
            ErrorCode.LIMIT_EXCEEDED,
            f"The payment would exceed the account's daily outbound limit of "
            f"{program.daily_outbound_limit:.2f} (already sent today: {spent:.2f}).",
        )


def payment_fee(program: Program, *, fee_waived: bool) -> Decimal:
    if fee_waived and not program.fee_waiver_allowed:
        raise ApiError(ErrorCode.NOT_SUPPORTED, "This program does not allow waiving the payment fee.")
    return ZERO if fee_waived else program.fee_per_payment


def payment_accept(
    *, account: Account, instruction: PaymentInstruction, schedule: ScheduledPayment | None = None
) -> PaymentRequest:
    """Check limits, then funds (amount plus fee), then debit the account into
    clearing and create the request: PENDING, or PENDING_TM at the program's
    review threshold. Raises ApiError (422) when the payment is stopped; nothing
    is then written. `schedule` is the schedule the payment runs for, if any.
    """
    with transaction.atomic():
        # The account row stays locked until this transaction ends: two payments
        # from one account serialise here, so neither can pass the funds or
        # daily-limit check against a balance the other is about to spend.
        locked = lock_accounts([account.id])[account.id]
        program = Program.objects.get(id=locked.program_id)
        debit = instruction.amount
        _check_limits(program, locked, debit)
        fee = payment_fee(program, fee_waived=instruction.fee_waived)
        if locked.balance < debit + fee:
            raise ApiError(
                ErrorCode.INSUFFICIENT_FUNDS,
                f"The account holds {locked.balance:.2f} {locked.currency}; "
                f"this payment needs {debit + fee:.2f} (amount {debit:.2f} plus fee {fee:.2f}).",
            )
        legs = [
            Leg(amount=-(debit + fee), currency=locked.currency, account=locked),
            Leg(
                amount=instruction.amount,
                currency=instruction.currency,
                system_account=_system(locked, SystemAccount.Kind.CLEARING, instruction.currency),
            ),
        ]
        if fee:
            legs.append(
                Leg(
                    amount=fee,
                    currency=locked.currency,
                    system_account=_system(locked, SystemAccount.Kind.FEES, locked.currency),
                )
            )
        entry = ledger_post(
            program_id=locked.program_id,
            sandbox=locked.sandbox,
            kind=LedgerTransaction.Kind.PAYMENT,
            legs=legs,
            memo=instruction.reference,
        )
        held = instruction.amount >= program.review_threshold
        return PaymentRequest.objects.create(
            program_id=locked.program_id,
            sandbox=locked.sandbox,
            customer_id=locked.customer_id,
            account=locked,
            status=PaymentRequest.Status.PENDING_TM if held else PaymentRequest.Status.PENDING,
            amount=instruction.amount,
            currency=instruction.currency,
            debit_amount=debit,
            fee=fee,
            fee_waived=instruction.fee_waived,
            reference=instruction.reference,
            purpose=instruction.purpose,
            charge_bearer=instruction.charge_bearer,
            beneficiary=instruction.beneficiary,
            payee=instruction.payee,
            virtual_iban=instruction.virtual_iban,
            schedule=schedule,
            acceptance=entry,
        )


def _system(account: Account, kind: str, currency: str) -> SystemAccount:
    return system_account_for(account.program_id, account.sandbox, kind, currency)
