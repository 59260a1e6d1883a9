import sys
from datetime import date

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from bankapi.formats import iso_date_parse
from payments.services.schedules import (
    RunDateInFuture,
    run_date_check,
    scheduled_payments_due,
    scheduled_payments_run,
    utc_today,
)


def _day(value: str) -> date:
    try:
        return iso_date_parse(value)
    except ValueError as exc:
        raise CommandError(f"--date must be YYYY-MM-DD, got {value!r}") from exc


class Command(BaseCommand):
    help = (
        "Run every scheduled payment due on a UTC day (default: today), as the 02:00 UTC beat "
        "task does. Safe to rerun: a day already run pays nothing again. A past day catches up "
        "missed runs; a day after today is refused."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--date", help="The UTC day to run, YYYY-MM-DD, today or earlier (default: today)."
        )

    def handle(self, *args, **options):
        day = _day(options["date"]) if options["date"] else utc_today()
        try:
            run_date_check(day)
        except RunDateInFuture as exc:
            raise CommandError(str(exc)) from exc
        with tqdm(
            total=scheduled_payments_due(day).count(), unit="schedule", file=sys.stderr, disable=None
        ) as bar:
            summary = scheduled_payments_run(day, on_progress=bar.update)
        self.stdout.write(
            f"Scheduled payments for {day}: {summary.paid} paid, {summary.held} held for review, "
            f"{len(summary.failed)} failed."
        )
        for schedule_id, run_date, reason in summary.failed:
            self.stdout.write(f"  failed: schedule {schedule_id} ({run_date}): {reason}")
