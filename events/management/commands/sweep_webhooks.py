from django.core.management.base import BaseCommand, CommandError

from bankapi.management.progress import progress
from events.delivery import deliveries_drain, deliveries_sweep


class Command(BaseCommand):
    help = (
        "Re-drive webhook deliveries now, in this process (no worker needed): events "
        "whose fan-out was lost, retries that are due, deliveries a killed worker left "
        "leased. The same work as the beat task sweep-webhook-deliveries; safe to run "
        "while workers run."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--limit",
            type=int,
            default=500,
            help="At most this many events and queues per run (default 500).",
        )

    def handle(self, *args, **options):
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        queues = sorted(deliveries_sweep(limit=options["limit"]))
        delivered = waiting = 0
        with progress(self.stdout, total=len(queues), desc="Webhook queues", unit="queue") as bar:
            for endpoint_id, resource_key in queues:
                result = deliveries_drain(endpoint_id, resource_key)
                delivered += result.delivered
                waiting += result.retry_at is not None
                bar.update(1)
        self.stdout.write(
            f"Swept {len(queues)} queue(s): {delivered} event(s) delivered, "
            f"{waiting} queue(s) waiting for a retry."
        )
