from django.core.management.base import BaseCommand

from authn.services.cleanup import auth_records_purge
from bankapi.idempotency import idempotency_records_purge
from bankapi.management.progress import progress


class Command(BaseCommand):
    help = (
        "Delete, in this process (no worker needed), what the daily beat tasks purge: "
        "idempotency keys past their retention, expired sign-in challenges and "
        "sessions, dead refresh tokens, stale lockout counters. Safe to run any time."
    )

    def handle(self, *args, **options):
        deleted: dict[str, int] = {}
        with progress(self.stdout, total=2, desc="Purges", unit="purge") as bar:
            deleted["idempotencyKeys"] = idempotency_records_purge()
            bar.update(1)
            deleted.update(auth_records_purge())
            bar.update(1)
        for kind, count in deleted.items():
            self.stdout.write(f"{kind}: {count} deleted")
        self.stdout.write(f"Purged {sum(deleted.values())} record(s).")
