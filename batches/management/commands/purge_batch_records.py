from django.core.management.base import BaseCommand

from batches.services.housekeeping import batch_records_purge


class Command(BaseCommand):
    help = (
        "Do, in this process (no worker needed), what the daily beat task "
        "batches-purge-expired-records does: delete initiate challenges spent or "
        "expired over a day ago, and empty the payload of drafts expired unsubmitted "
        "over a day ago (their record stays). Safe to run any time."
    )

    def handle(self, *args, **options):
        purged = batch_records_purge()
        self.stdout.write(f"challenges: {purged['challenges']} deleted")
        self.stdout.write(f"draftPayloads: {purged['draftPayloads']} emptied")
