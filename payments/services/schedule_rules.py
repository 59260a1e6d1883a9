"""What a schedule's run is, for every runner (one at a time or in sets): the
series' dates, the instruction a run pays, the day's rules it must pass, its
outcome and the events it reports."""

import calendar
from dataclasses import dataclass, field
from datetime import date, timedelta

from bankapi.errors import ApiError, ErrorCode, validation_error
from events.models import Event, EventType
from payments.events import scheduled_payment_event_new
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import ScheduleDetails
from payments.rules import account_reference_error, virtual_iban_error
from payments.services.acceptance import PaymentInstruction

Frequency = ScheduledPayment.Frequency
_STEP_DAYS = {Frequency.DAILY: 1, Frequency.WEEKLY: 7, Frequency.FORTNIGHTLY: 14}


def add_months(anchor: date, months: int) -> date:
    """The anchor's day of month, `months` later; the month's last day where
    that day does not exist (31 January + 1 month = 28 or 29 February)."""
    index = anchor.month - 1 + months
    year, month = anchor.year + index // 12, index % 12 + 1
    return date(year, month, min(anchor.day, calendar.monthrange(year, month)[1]))


def occurrence_date(anchor: date, frequency: str, occurrence: int) -> date | None:
    """Date of run number `occurrence` (0 is the anchor) of a series; None past
    the end of a one-off."""
    if frequency == Frequency.NEVER:
        return anchor if occurrence == 0 else None
    if frequency == Frequency.MONTHLY:
        return add_months(anchor, occurrence)
    return anchor + timedelta(days=_STEP_DAYS[Frequency(frequency)] * occurrence)


def schedule_advance(schedule: ScheduledPayment) -> None:
    """Move the schedule on to its next run date (COMPLETED past a series' end)."""
    schedule.occurrence += 1
    schedule.next_run_date = occurrence_date(schedule.scheduled_date, schedule.frequency, schedule.occurrence)
    if schedule.next_run_date is None:
        schedule.status = ScheduledPayment.Status.COMPLETED


def instruction_of(schedule: ScheduledPayment) -> PaymentInstruction:
    details = ScheduleDetails.from_stored(schedule.details)
    beneficiary = schedule.beneficiary
    # The beneficiary as it is on the day of the run.
    payee = beneficiary.payee() if beneficiary else details.payee
    return PaymentInstruction(
        amount=schedule.amount,
        currency=schedule.currency,
        reference=schedule.reference,
        purpose=details.purpose,
        charge_bearer=details.charge_bearer,
        beneficiary=beneficiary,
        payee=payee,
        virtual_iban=details.virtual_iban,
        fee_waived=details.fee_waived,
    )


def run_outcome(request: PaymentRequest) -> str:
    """A run's outcome for the payment it made: HELD for review, or PAID."""
    if request.status == PaymentRequest.Status.PENDING_TM:
        return ScheduleRun.Outcome.HELD
    return ScheduleRun.Outcome.PAID


@dataclass
class RunSummary:
    paid: int = 0
    held: int = 0
    failed: list[tuple[str, date, str]] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return self.paid + self.held + len(self.failed)

    def add(self, other: "RunSummary") -> None:
        self.paid += other.paid
        self.held += other.held
        self.failed += other.failed


def schedule_run_check(schedule: ScheduledPayment, instruction: PaymentInstruction) -> None:
    """Refuse (ApiError) a run that the rules in force on its day refuse.

    The account and the beneficiary are read as they are today: the account
    must still be the schedule's customer's and in the schedule's currency, the
    reference must fit the account's current rules (length, charset), and the
    virtual IBAN rule holds for the payee as paid today.
    """
    account = schedule.account
    owner = (account.customer_id, account.program_id, account.sandbox)
    if owner != (schedule.customer_id, schedule.program_id, schedule.sandbox):
        raise ApiError(ErrorCode.INVALID_STATE, "The account no longer belongs to the schedule's customer.")
    if account.currency != schedule.currency:
        raise ApiError(
            ErrorCode.INVALID_STATE,
            f"The account is now in {account.currency}; the schedule pays {schedule.currency}.",
        )
    reference_error = account_reference_error(account, instruction.reference)
    if reference_error:
        raise validation_error("reference", f"reference: {reference_error}")
    iban_error = virtual_iban_error(
        virtual_iban=instruction.virtual_iban,
        currency=instruction.currency,
        payee=instruction.payee,
    )
    if iban_error:
        raise validation_error("virtualIban", f"virtualIban: {iban_error}")


def schedule_concluded_events(schedule: ScheduledPayment, run: ScheduleRun | None) -> list[Event]:
    """What a schedule just moved past a run date reports: the run's success or
    failure (none when the date had run already), and its completion."""
    events = []
    if run is not None:
        failed = run.outcome == ScheduleRun.Outcome.FAILED
        events.append(
            scheduled_payment_event_new(
                schedule,
                EventType.SCHEDULED_PAYMENT_RUN_FAILED
                if failed
                else EventType.SCHEDULED_PAYMENT_RUN_SUCCEEDED,
            )
        )
    if schedule.status == ScheduledPayment.Status.COMPLETED:
        events.append(scheduled_payment_event_new(schedule, EventType.SCHEDULED_PAYMENT_COMPLETED))
    return events
