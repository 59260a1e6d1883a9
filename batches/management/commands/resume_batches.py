from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from bankapi.management.progress import progress
from batches.services.processing import batch_process, batches_stalled
from batches.services.verification import draft_verify, drafts_stalled
from batches.tasks import STALLED_AFTER


class Command(BaseCommand):
    help = (
        "Finish, in this process (no worker needed), the draft verifications and "
        "batches left unfinished by a dead worker: the same work as the beat task "
        "batches-resume-stalled. Running a batch twice never pays an item twice."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=float,
            default=STALLED_AFTER.total_seconds(),
            help=f"Seconds without progress after which work counts as stalled (default "
            f"{STALLED_AFTER.total_seconds():.0f}).",
        )

    def handle(self, *args, **options):
        if options["older_than"] < 0:
            raise CommandError("--older-than must not be negative.")
        older_than = timedelta(seconds=options["older_than"])
        drafts = drafts_stalled(older_than)
        batches = batches_stalled(older_than)
        with progress(self.stdout, total=len(drafts) + len(batches), desc="Stalled work", unit="item") as bar:
            for draft_id in drafts:
                draft_verify(draft_id)
                bar.update(1)
            for batch_id in batches:
                batch_process(batch_id)
                bar.update(1)
        self.stdout.write(f"Resumed {len(drafts)} draft verification(s) and {len(batches)} batch(es).")
