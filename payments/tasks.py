"""Celery tasks: thin wrappers around the services, safe to run twice."""

from celery import shared_task

from bankapi.formats import iso_date_parse
from payments.services.schedules import scheduled_payments_run, utc_today
from payments.services.settlement import payments_settle_pending
from payments.services.statement_days import statement_days_store


@shared_task
def settle_pending_payments() -> int:
    """Settle production PENDING requests. Sandbox requests never settle on their
    own: integrators drive them with the sandbox routes or `manage.py settle_payments`."""
    return payments_settle_pending(sandbox=False)


@shared_task
def run_scheduled_payments(day: str | None = None) -> dict:
    """Run the schedules due on `day` (YYYY-MM-DD; default: today in UTC).

    One task for the whole day, working through the due schedules in chunks; a
    second worker running it at the same time takes the chunks the first has not
    claimed, and a redelivery finds the day done. A day after today (UTC) is
    refused with RunDateInFuture: nothing is paid ahead of its date.
    """
    summary = scheduled_payments_run(iso_date_parse(day) if day else utc_today())
    return {"paid": summary.paid, "held": summary.held, "failed": len(summary.failed)}


@shared_task
def store_statement_days(day: str | None = None) -> int:
    """Store yesterday's statement lines (relative to `day`, YYYY-MM-DD; default:
    today in UTC) of the accounts that have booked since, in every format
    (`statement_days_store`): the first statement of a year then reads stored
    days only. Safe to run twice."""
    return statement_days_store(iso_date_parse(day) if day else utc_today())
