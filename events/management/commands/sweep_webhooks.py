from django.core.management.base import BaseCommand, CommandError

from bankapi.management.progress import progress
from events.delivery import deliveries_sweep
from events.drain import endpoint_drain


class Command(BaseCommand):
    help = (
        "Re-drive webhook deliveries now, in this process (no worker needed): events "
        "whose fan-out was lost, retries that are due, deliveries a killed worker left "
        "behind. The same work as the beat task sweep-webhook-deliveries; safe to run "
        "while workers run (an endpoint a worker is draining is left to it)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--limit",
            type=int,
            default=500,
            help="At most this many events fanned out per run (default 500).",
        )

    def handle(self, *args, **options):
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1.")
        endpoints = sorted(str(endpoint) for endpoint in deliveries_sweep(limit=options["limit"]))
        delivered = busy = 0
        with progress(self.stdout, total=len(endpoints), desc="Webhook endpoints", unit="endpoint") as bar:
            for endpoint_id in endpoints:
                result = endpoint_drain(endpoint_id)
                delivered += result.delivered
                busy += not result.drained
                bar.update(1)
        self.stdout.write(
            f"Swept {len(endpoints)} endpoint(s): {delivered} event(s) delivered, "
            f"{busy} endpoint(s) left to the worker draining them."
        )
