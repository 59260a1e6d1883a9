"""A chunk of due schedules run in sets: every run date of every schedule of
the chunk decided on its account as the runs before it left it, then written
in a handful of statements, whatever the chunk's size.

The runner (`payments.services.schedules`) has locked the chunk's schedules
(SKIP LOCKED). Here the chunk's accounts are locked once, in primary-key
order (`lock_accounts`), and each run is decided by `payments.decision` on
that account's snapshot, after the day's rules of the schedule
(`schedule_run_check`). The accepted runs are written by the one bulk writer
(`works_write_bulk`: movements, postings, requests, their events and the
accounts), then the run records, the schedules and their events, one
statement each. A run refused by its day's rules or by the decision is
recorded FAILED with its reason, as the one-at-a-time runner records it.

Anything unexpected (a database error, a bug) rolls back the whole chunk's
savepoint; the runner then runs that chunk one schedule at a time, where
each run date has a savepoint of its own.
"""

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime

from bankapi.clock import customer_now
from bankapi.errors import ApiError
from bankapi.models import Program
from events.models import Event
from events.recording import events_record
from payments.decision import Instruction, Refused, Rules, Snapshot, decide
from payments.ledger import lock_accounts
from payments.models import ScheduledPayment, ScheduleRun
from payments.services.acceptance import order_of
from payments.services.schedule_rules import (
    RunSummary,
    instruction_of,
    run_outcome,
    schedule_advance,
    schedule_concluded_events,
    schedule_run_check,
)
from payments.writer import PaymentWork, SystemAccounts, payment_work, works_write_bulk


@dataclass
class _Written:
    """What a chunk writes, gathered before any statement is sent."""

    works: dict[tuple[uuid.UUID, bool], list[PaymentWork]] = field(default_factory=lambda: defaultdict(list))
    runs: list[ScheduleRun] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def schedules_run_in_sets(chunk: list[ScheduledPayment], day: date, summary: RunSummary) -> None:
    """Run every date up to `day` of each locked schedule of `chunk` (see the
    module); add what happened to `summary`. Must run inside a transaction
    (a savepoint the caller rolls back when this raises)."""
    if not chunk:
        return
    locked = lock_accounts(schedule.account_id for schedule in chunk)
    snapshots = {account_id: Snapshot.of(account) for account_id, account in locked.items()}
    already = set(
        ScheduleRun.objects.filter(schedule__in=chunk, run_date__lte=day).values_list(
            "schedule_id", "run_date"
        )
    )
    programs = {p.id: p for p in Program.objects.filter(id__in={s.program_id for s in chunk})}
    # One time for the chunk: a chunk is either customers without a clock (the
    # real run skips clock customers) or one clock's customers (its advance).
    now = customer_now(chunk[0].customer_id)
    system = SystemAccounts()
    written, own = _Written(), RunSummary()
    for schedule in chunk:
        schedule.account = locked[schedule.account_id]
        rules = Rules.of(programs[schedule.program_id])
        while (
            schedule.status == ScheduledPayment.Status.ACTIVE
            and schedule.next_run_date is not None
            and schedule.next_run_date <= day
        ):
            run_date = schedule.next_run_date
            run = None
            if (schedule.id, run_date) not in already:
                run = _run(schedule, run_date, rules, snapshots, now, system, written, own)
                schedule.last_run = run
            schedule_advance(schedule)
            written.events += schedule_concluded_events(schedule, run)
    for (program_id, sandbox), works in written.works.items():
        paying = {work.account.id for work in works}
        works_write_bulk(
            works,
            program_id=program_id,
            sandbox=sandbox,
            locked=locked,
            releasing=[],
            after={account_id: snapshots[account_id] for account_id in paying},
            now=now,
        )
    ScheduleRun.objects.bulk_create(written.runs, batch_size=1000)
    ScheduledPayment.objects.bulk_update(
        chunk, ["occurrence", "next_run_date", "status", "last_run", "updated_at"], batch_size=1000
    )
    events_record(written.events)
    summary.add(own)


def _run(
    schedule: ScheduledPayment,
    run_date: date,
    rules: Rules,
    snapshots: dict[uuid.UUID, Snapshot],
    now: datetime,
    system: SystemAccounts,
    written: _Written,
    summary: RunSummary,
) -> ScheduleRun:
    """Decide one run date of the schedule on its account as the earlier runs
    left it; its record (unsaved), its work gathered in `written`."""
    run = ScheduleRun(schedule=schedule, run_date=run_date, outcome=ScheduleRun.Outcome.FAILED)
    written.runs.append(run)
    account = schedule.account
    instruction = instruction_of(schedule)
    try:
        schedule_run_check(schedule, instruction)
    except ApiError as refused:
        return _failed(run, refused, summary)
    # A schedule always has its amount (`schedule_create` refuses one without).
    amount = schedule.amount
    decided = decide(
        rules,
        snapshots[account.id],
        Instruction(
            debit=amount, amount=amount, currency=instruction.currency, fee_waived=instruction.fee_waived
        ),
        now=now,
    )
    if isinstance(decided, Refused):
        return _failed(run, decided.error(), summary)
    snapshots[account.id] = decided.after
    work = payment_work(
        account=account,
        decided=decided,
        order=order_of(instruction, schedule=schedule),
        now=now,
        system=system,
    )
    written.works[(account.program_id, account.sandbox)].append(work)
    run.outcome, run.payment_request = run_outcome(work.request), work.request
    if run.outcome == ScheduleRun.Outcome.HELD:
        summary.held += 1
    else:
        summary.paid += 1
    return run


def _failed(run: ScheduleRun, error: ApiError, summary: RunSummary) -> ScheduleRun:
    """The run recorded FAILED with the refusal as its reason, as the one-by-one runner words it."""
    run.reason = f"{error.code}: {error.message}"[:300]
    summary.failed.append((str(run.schedule_id), run.run_date, run.reason))
    return run
