"""Scheduled payments: the series dates, creation, cancellation and the runner.

The runner is one function for every caller (Celery beat at 02:00 UTC, `manage.py
run_scheduled_payments`, tests). How it stays correct when run twice or on two
workers at once:
- due schedules are claimed with SELECT ... FOR UPDATE SKIP LOCKED, so two runners
  split the work instead of both paying the same schedule;
- each run date is recorded in a ScheduleRun row, unique per (schedule, run date),
  in the same transaction as the payment, so a rerun, a second beat instance or a
  redelivered task finds the day done and pays nothing again;
- a schedule advances past its run date in that same transaction, so it is no
  longer due once its chunk commits.
"""

import calendar
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, timedelta

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Account, Customer
from events.models import EventType
from payments.events import scheduled_payment_event
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.services.acceptance import PaymentInstruction, payment_accept, payment_fee

logger = logging.getLogger(__name__)

Frequency = ScheduledPayment.Frequency
RUN_CHUNK = 200
_STEP_DAYS = {Frequency.DAILY: 1, Frequency.WEEKLY: 7, Frequency.FORTNIGHTLY: 14}


def utc_today() -> date:
    return timezone.now().astimezone(UTC).date()


class RunDateInFuture(Exception):
    """A run was asked for a UTC day that has not come yet."""

    def __init__(self, day: date, today: date) -> None:
        super().__init__(
            f"Cannot run scheduled payments for {day}: it is after today ({today}, UTC). "
            "A run pays the schedules due on or before its day, so it may run today or "
            "catch up a past day, never pay ahead."
        )
        self.day = day
        self.today = today


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
    return anchor + timedelta(days=_STEP_DAYS[frequency] * occurrence)


def _advance(schedule: ScheduledPayment) -> None:
    schedule.occurrence += 1
    schedule.next_run_date = occurrence_date(schedule.scheduled_date, schedule.frequency, schedule.occurrence)
    if schedule.next_run_date is None:
        schedule.status = ScheduledPayment.Status.COMPLETED


def schedule_create(
    *,
    account: Account,
    instruction: PaymentInstruction,
    anchor: date,
    frequency: str,
    first_payment: PaymentRequest | None = None,
) -> ScheduledPayment:
    """A schedule whose series starts on `anchor`.

    With `first_payment` (a payment made today, the series' first), that payment
    is recorded as today's run and the schedule waits for its next date.
    """
    # A program that refuses fee waivers would refuse every run: say so now.
    payment_fee(account.program, fee_waived=instruction.fee_waived)
    schedule = ScheduledPayment.objects.create(
        program_id=account.program_id,
        sandbox=account.sandbox,
        customer_id=account.customer_id,
        account=account,
        frequency=frequency,
        scheduled_date=anchor,
        next_run_date=anchor,
        amount=instruction.amount,
        currency=instruction.currency,
        reference=instruction.reference,
        beneficiary=instruction.beneficiary,
        details={
            "purpose": instruction.purpose,
            "chargeBearer": instruction.charge_bearer,
            "payee": None if instruction.beneficiary else instruction.payee,
            "virtualIban": instruction.virtual_iban,
            "feeWaived": instruction.fee_waived,
        },
    )
    if first_payment is not None:
        first_payment.schedule = schedule
        first_payment.save(update_fields=["schedule"])
        schedule.last_run = ScheduleRun.objects.create(
            schedule=schedule,
            run_date=anchor,
            outcome=_outcome(first_payment),
            payment_request=first_payment,
        )
        _advance(schedule)
        schedule.save()
    return schedule


def schedule_cancel(schedule: ScheduledPayment) -> ScheduledPayment:
    """ACTIVE -> CANCELLED; the schedule stays listed and pays nothing more."""
    with transaction.atomic():
        # Waits for a runner holding the row: a run under way finishes first, then
        # the cancellation stops every later one.
        locked = ScheduledPayment.objects.select_for_update().get(id=schedule.id)
        if locked.status != ScheduledPayment.Status.ACTIVE:
            raise ApiError(ErrorCode.INVALID_STATE, f"A {locked.status} schedule cannot be cancelled.")
        locked.status = ScheduledPayment.Status.CANCELLED
        locked.next_run_date = None
        locked.save(update_fields=["status", "next_run_date", "updated_at"])
        return locked


def instruction_of(schedule: ScheduledPayment) -> PaymentInstruction:
    details = schedule.details
    beneficiary = schedule.beneficiary
    return PaymentInstruction(
        amount=schedule.amount,
        currency=schedule.currency,
        reference=schedule.reference,
        purpose=details.get("purpose", ""),
        charge_bearer=details.get("chargeBearer", ""),
        beneficiary=beneficiary,
        # The beneficiary as it is on the day of the run.
        payee=beneficiary.payee_details() if beneficiary else details.get("payee"),
        virtual_iban=details.get("virtualIban", ""),
        fee_waived=details.get("feeWaived", False),
    )


def _outcome(request: PaymentRequest) -> str:
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


def _run_once(schedule: ScheduledPayment, run_date: date, summary: RunSummary) -> ScheduleRun | None:
    """Pay one run date of a locked schedule; None if that day was already run."""
    try:
        with transaction.atomic():
            run = ScheduleRun.objects.create(
                schedule=schedule, run_date=run_date, outcome=ScheduleRun.Outcome.FAILED
            )
    except IntegrityError:
        logger.warning("Schedule %s already ran for %s", schedule.id, run_date)
        return None
    try:
        # Its own savepoint: a refused payment leaves nothing behind but the run record.
        with transaction.atomic():
            request = payment_accept(
                account=schedule.account, instruction=instruction_of(schedule), schedule=schedule
            )
    except ApiError as error:
        run.reason = f"{error.code}: {error.message}"[:300]
        summary.failed.append((str(schedule.id), run_date, run.reason))
    else:
        run.outcome = _outcome(request)
        run.payment_request = request
        if run.outcome == ScheduleRun.Outcome.HELD:
            summary.held += 1
        else:
            summary.paid += 1
    run.save(update_fields=["outcome", "payment_request", "reason"])
    return run


def _run_due(schedule: ScheduledPayment, day: date, summary: RunSummary) -> None:
    """Every run date of the schedule up to `day` (one, unless runs were missed)."""
    while schedule.status == ScheduledPayment.Status.ACTIVE and schedule.next_run_date <= day:
        run = _run_once(schedule, schedule.next_run_date, summary)
        if run is not None:
            schedule.last_run = run
        _advance(schedule)
        if run is not None:
            failed = run.outcome == ScheduleRun.Outcome.FAILED
            scheduled_payment_event(
                schedule,
                EventType.SCHEDULED_PAYMENT_RUN_FAILED
                if failed
                else EventType.SCHEDULED_PAYMENT_RUN_SUCCEEDED,
            )
        if schedule.status == ScheduledPayment.Status.COMPLETED:
            scheduled_payment_event(schedule, EventType.SCHEDULED_PAYMENT_COMPLETED)
    schedule.save(update_fields=["occurrence", "next_run_date", "status", "last_run", "updated_at"])


def run_date_check(day: date) -> None:
    """Refuse a run day after today's UTC date (RunDateInFuture)."""
    today = utc_today()
    if day > today:
        raise RunDateInFuture(day, today)


def scheduled_payments_due(day: date):
    return ScheduledPayment.objects.filter(status=ScheduledPayment.Status.ACTIVE, next_run_date__lte=day)


def scheduled_payments_run(
    day: date,
    *,
    chunk_size: int = RUN_CHUNK,
    on_progress: Callable[[int], None] | None = None,
) -> RunSummary:
    """Run every schedule due on or before the UTC day `day`, one chunk per
    transaction. Safe to call twice, or from two workers at once.

    `day` may be today or a past day (a missed run caught up), never a later day:
    that would debit today every run dated up to it (RunDateInFuture).
    """
    run_date_check(day)
    return _run_in_chunks(scheduled_payments_due(day), day, chunk_size=chunk_size, on_progress=on_progress)


SANDBOX_CLOCK_MAX_DAYS = 366


def sandbox_clock_run(*, customer: Customer, up_to: date) -> RunSummary:
    """Sandbox only: run the customer's schedules for every day up to `up_to`, as
    the 02:00 UTC run of each of those days would have. Run records stay unique
    per (schedule, day), so the real run of a day already run here pays nothing."""
    if not customer.sandbox:
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Not found")
    latest = utc_today() + timedelta(days=SANDBOX_CLOCK_MAX_DAYS)
    if up_to > latest:
        raise validation_error(
            "date", f"date may be at most {SANDBOX_CLOCK_MAX_DAYS} days after today (UTC)."
        )
    due = scheduled_payments_due(up_to).filter(customer=customer, sandbox=True)
    return _run_in_chunks(due, up_to)


def _run_in_chunks(
    due: QuerySet[ScheduledPayment],
    day: date,
    *,
    chunk_size: int = RUN_CHUNK,
    on_progress: Callable[[int], None] | None = None,
) -> RunSummary:
    summary = RunSummary()
    while True:
        with transaction.atomic():
            chunk = list(
                due.select_for_update(skip_locked=True, of=("self",))
                .select_related("account", "beneficiary")
                # Account order: accounts are then locked in ascending id across
                # the chunk, as the ledger locks them, so two runners (or a runner
                # and a payment) cannot deadlock on them.
                .order_by("account_id", "id")[:chunk_size]
            )
            for schedule in chunk:
                _run_due(schedule, day, summary)
        if on_progress is not None:
            on_progress(len(chunk))
        if len(chunk) < chunk_size:
            logger.info(
                "Scheduled payments for %s: %s paid, %s held, %s failed",
                day,
                summary.paid,
                summary.held,
                len(summary.failed),
            )
            return summary
