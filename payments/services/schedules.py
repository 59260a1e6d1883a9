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
  longer due once its chunk commits;
- each run date of each schedule runs in its own savepoint: a run refused by the
  rules of its day (the account's state, its reference rules, the virtual IBAN
  rule, limits, funds) or failing on an unexpected error (a database error
  included) is recorded FAILED with its reason, the schedule goes on, and the
  other schedules of the chunk pay.
"""

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, date, timedelta

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.models import Account, Customer
from events.recording import events_record
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from payments.payees import ScheduleDetails
from payments.services.acceptance import PaymentInstruction, payment_accept, payment_fee
from payments.services.schedule_rules import (
    RunSummary,
    instruction_of,
    run_outcome,
    schedule_advance,
    schedule_concluded_events,
    schedule_run_check,
)
from payments.services.schedule_sets import schedules_run_in_sets

logger = logging.getLogger(__name__)

RUN_CHUNK = 200


def utc_today(customer_id: uuid.UUID | None = None) -> date:
    """Today's UTC date, for the customer when one is named (its test clock's day)."""
    return customer_now(customer_id).astimezone(UTC).date()


# Schedules are paid from this time (UTC) on their day.
RUN_HOUR_UTC = 2


def schedule_run_day() -> date:
    """The latest day whose schedules are due: today from 02:00 UTC on, else yesterday."""
    now = timezone.now().astimezone(UTC)
    return now.date() if now.hour >= RUN_HOUR_UTC else now.date() - timedelta(days=1)


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
    if instruction.amount is None:
        # Only a quote-funded payment leaves its amount to the quote, and those are never scheduled.
        raise validation_error("amount", "This field is required.")
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
        details=ScheduleDetails(
            purpose=instruction.purpose,
            charge_bearer=instruction.charge_bearer,
            payee=None if instruction.beneficiary else instruction.payee,
            virtual_iban=instruction.virtual_iban,
            fee_waived=instruction.fee_waived,
        ).to_stored(),
    )
    if first_payment is not None:
        first_payment.schedule = schedule
        first_payment.save(update_fields=["schedule"])
        schedule.last_run = ScheduleRun.objects.create(
            schedule=schedule,
            run_date=anchor,
            outcome=run_outcome(first_payment),
            payment_request=first_payment,
        )
        schedule_advance(schedule)
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
        instruction = instruction_of(schedule)
        schedule_run_check(schedule, instruction)
        # Its own savepoint: a refused payment leaves nothing behind but the run record.
        with transaction.atomic():
            request = payment_accept(account=schedule.account, instruction=instruction, schedule=schedule)
    except ApiError as error:
        run.reason = f"{error.code}: {error.message}"[:300]
        summary.failed.append((str(schedule.id), run_date, run.reason))
    else:
        run.outcome = run_outcome(request)
        run.payment_request = request
        if run.outcome == ScheduleRun.Outcome.HELD:
            summary.held += 1
        else:
            summary.paid += 1
    run.save(update_fields=["outcome", "payment_request", "reason"])
    return run


def _conclude(schedule: ScheduledPayment, run: ScheduleRun | None) -> None:
    """Move the schedule past the date just run, and say so."""
    if run is not None:
        schedule.last_run = run
    schedule_advance(schedule)
    events_record(schedule_concluded_events(schedule, run))
    schedule.save(update_fields=["occurrence", "next_run_date", "status", "last_run", "updated_at"])


def _run_date(schedule: ScheduledPayment, run_date: date, summary: RunSummary) -> None:
    """Run one date of a locked schedule in its own savepoint.

    An unexpected error (a database error, a bug) rolls back this date's work
    only; the date is then recorded FAILED with the error's kind as its reason
    (the traceback goes to the log) and the schedule goes on. If even that
    cannot be written, the error propagates: the schedule is left as it was.
    """
    own = RunSummary()
    try:
        with transaction.atomic():
            _conclude(schedule, _run_once(schedule, run_date, own))
    except Exception as error:
        logger.exception("Schedule %s failed to run for %s", schedule.id, run_date)
        # The savepoint undid the date's writes; the in-memory schedule may be ahead.
        schedule.refresh_from_db()
        reason = f"{ErrorCode.INTERNAL_SERVER_ERROR}: the run failed ({type(error).__name__})."
        with transaction.atomic():
            run = ScheduleRun.objects.create(
                schedule=schedule, run_date=run_date, outcome=ScheduleRun.Outcome.FAILED, reason=reason
            )
            _conclude(schedule, run)
        own = RunSummary(failed=[(str(schedule.id), run_date, reason)])
    summary.add(own)


def _run_due(schedule: ScheduledPayment, day: date, summary: RunSummary) -> bool:
    """Every run date of the schedule up to `day` (one, unless runs were missed).
    False when the schedule could not be run at all (left for the next run)."""
    try:
        while (
            schedule.status == ScheduledPayment.Status.ACTIVE
            and schedule.next_run_date is not None
            and schedule.next_run_date <= day
        ):
            _run_date(schedule, schedule.next_run_date, summary)
    except Exception:
        logger.exception("Schedule %s could not be run or recorded; left for the next run", schedule.id)
        return False
    return True


def run_date_check(day: date) -> None:
    """Refuse a run day after today's UTC date (RunDateInFuture)."""
    today = utc_today()
    if day > today:
        raise RunDateInFuture(day, today)


def scheduled_payments_due(day: date, clock_id: uuid.UUID | None = None) -> QuerySet[ScheduledPayment]:
    """Schedules due on or before `day`: of customers without a test clock (the
    real runs), or of the clock `clock_id`'s customers (its advance)."""
    return ScheduledPayment.objects.filter(
        status=ScheduledPayment.Status.ACTIVE, next_run_date__lte=day, customer__test_clock_id=clock_id
    )


def scheduled_payments_run(
    day: date,
    *,
    chunk_size: int = RUN_CHUNK,
    on_progress: Callable[[int], None] | None = None,
    heartbeat: Callable[[], None] | None = None,
) -> RunSummary:
    """Run every schedule due on or before the UTC day `day`, one chunk per
    transaction. Safe to call twice, or from two workers at once. `heartbeat` is
    called after each chunk (a periodic run's lease).

    `day` may be today or a past day (a missed run caught up), never a later day:
    that would debit today every run dated up to it (RunDateInFuture).
    """
    run_date_check(day)

    def progress(count: int) -> None:
        if on_progress is not None:
            on_progress(count)
        if heartbeat is not None and count:
            heartbeat()

    return _run_in_chunks(scheduled_payments_due(day), day, chunk_size=chunk_size, on_progress=progress)


def scheduled_payments_run_for_clock(day: date, clock_id: uuid.UUID) -> RunSummary:
    """The 02:00 UTC run of `day` for a test clock's customers, as beat's run
    pays it (the same runner, run records and events), while the clock reads
    that moment (the clock's advance sets it). The clock's day is its own, so
    no real "today" bounds it."""
    return _run_in_chunks(scheduled_payments_due(day, clock_id), day)


SANDBOX_CLOCK_MAX_DAYS = 366


def sandbox_clock_run(*, customer: Customer, up_to: date) -> RunSummary:
    """Sandbox only: run the customer's schedules for every day up to `up_to`, as
    the 02:00 UTC run of each of those days would have. Run records stay unique
    per (schedule, day), so the real run of a day already run here pays nothing."""
    if not customer.sandbox:
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Not found")
    if customer.test_clock_id is not None:
        raise ApiError(
            ErrorCode.INVALID_STATE,
            "This customer lives on a test clock: its schedules run when the clock is advanced.",
        )
    latest = utc_today() + timedelta(days=SANDBOX_CLOCK_MAX_DAYS)
    if up_to > latest:
        raise validation_error(
            "date", f"date may be at most {SANDBOX_CLOCK_MAX_DAYS} days after today (UTC)."
        )
    due = scheduled_payments_due(up_to).filter(customer=customer, sandbox=True)
    return _run_in_chunks(due, up_to)


def _run_in_sets(chunk: list[ScheduledPayment], day: date, summary: RunSummary) -> bool:
    """The locked chunk run in sets (`schedules_run_in_sets`), in a savepoint;
    False, with nothing written and the chunk's schedules read again, when
    anything unexpected happened: the caller then runs it one schedule at a
    time, where each run date has a savepoint of its own."""
    try:
        with transaction.atomic():
            schedules_run_in_sets(chunk, day, summary)
    except Exception:
        logger.exception("Schedules of a chunk could not run in sets for %s; running them one by one", day)
        for schedule in chunk:
            schedule.refresh_from_db()
        return False
    return True


def _run_in_chunks(
    due: QuerySet[ScheduledPayment],
    day: date,
    *,
    chunk_size: int = RUN_CHUNK,
    on_progress: Callable[[int], None] | None = None,
) -> RunSummary:
    summary = RunSummary()
    # Schedules that could not even record a failure: not taken again in this run.
    stuck: set[uuid.UUID] = set()
    while True:
        with transaction.atomic():
            chunk = list(
                due.exclude(id__in=stuck)
                .select_for_update(skip_locked=True, of=("self",))
                .select_related("account", "beneficiary")
                # Account order: accounts are then locked in ascending id across
                # the chunk, as the ledger locks them, so two runners (or a runner
                # and a payment) cannot deadlock on them.
                .order_by("account_id", "id")[:chunk_size]
            )
            if not _run_in_sets(chunk, day, summary):
                for schedule in chunk:
                    if not _run_due(schedule, day, summary):
                        stuck.add(schedule.id)
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
