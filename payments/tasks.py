"""Celery tasks: thin wrappers around the services, safe to run twice."""

from datetime import datetime

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from bankapi.formats import iso_date_parse
from bankapi.ops.periodic import Lease
from bankapi.tasks import task_publish, tasks_run_in_process
from payments.services.schedules import schedule_run_day, scheduled_payments_run, utc_today
from payments.services.settlement import payments_pending_beyond_a_chunk, payments_settle_pending
from payments.services.statement_days import statement_days_store


@shared_task
def settle_pending_payments(lease: Lease | None = None) -> int:
    """Settle the production PENDING requests there were when the run started
    (beat's run holds a lease: `bankapi.ops.periodic`). With a backlog of more than a
    chunk and a broker, it hands chunks to `SETTLEMENT_HELPERS` helper tasks on
    other workers too. Sandbox requests never settle on their own: integrators
    drive them with the sandbox routes or `manage.py settle_payments`."""
    until = lease.started_at if lease else timezone.now()
    if settings.SETTLEMENT_HELPERS and not tasks_run_in_process() and payments_pending_beyond_a_chunk(until):
        for _ in range(settings.SETTLEMENT_HELPERS):
            task_publish(settle_pending_chunks, until.isoformat())
    return payments_settle_pending(
        sandbox=False, created_until=until, heartbeat=lease.beat if lease else None
    )


@shared_task
def settle_pending_chunks(created_until: str) -> int:
    """A helper of a settlement run: settles chunks of the production requests
    created at or before `created_until` (ISO 8601) beside the run, sharing its
    claims (SKIP LOCKED), until none is left."""
    return payments_settle_pending(sandbox=False, created_until=datetime.fromisoformat(created_until))


@shared_task
def run_scheduled_payments(day: str | None = None, lease: Lease | None = None) -> dict:
    """Run the schedules due on `day` (YYYY-MM-DD; default: the latest day whose
    02:00 UTC has passed: today from 02:00, yesterday before).

    Beat sends it every few seconds: a day's run starts at 02:00, and a run its
    worker left unfinished (a death) is taken up by the next tick once its
    lease expires; a day already run finds nothing due (one read). A second
    worker running it at the same time takes the chunks the first has not
    claimed. A day after today (UTC) is refused with RunDateInFuture: nothing
    is paid ahead of its date.
    """
    summary = scheduled_payments_run(
        iso_date_parse(day) if day else schedule_run_day(), heartbeat=lease.beat if lease else None
    )
    return {"paid": summary.paid, "held": summary.held, "failed": len(summary.failed)}


@shared_task
def store_statement_days(day: str | None = None) -> int:
    """Store yesterday's statement lines (relative to `day`, YYYY-MM-DD; default:
    today in UTC) of the accounts that have booked since, in every format
    (`statement_days_store`): the first statement of a year then reads stored
    days only. Safe to run twice."""
    return statement_days_store(iso_date_parse(day) if day else utc_today())
