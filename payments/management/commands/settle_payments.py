from django.core.management.base import BaseCommand

from payments.services.settlement import payments_settle_pending

ENVIRONMENTS = {"production": False, "sandbox": True, "all": None}


class Command(BaseCommand):
    help = (
        "Settle every PENDING payment request: clearing -> external, booked on the "
        "account's statement. Safe to run twice or on two machines at once."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--environment",
            choices=sorted(ENVIRONMENTS),
            default="all",
            help="Which rows to settle (default: all). The beat task settles production only.",
        )

    def handle(self, *args, **options):
        settled = payments_settle_pending(sandbox=ENVIRONMENTS[options["environment"]])
        self.stdout.write(f"Settled {settled} payment request(s).")
