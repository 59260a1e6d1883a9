import json

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils.module_loading import import_string

from bankapi.models import SandboxManifest
from bankapi.sandbox import SandboxContext

MANIFEST_KEY = "bootstrap_sandbox"
# Key order of the printed object: other tools read it, so it stays as it is.
ORDER = [
    "consumerProgramId",
    "businessProgramId",
    "customer",
    "customer2",
    "business",
    "custodian",
    "management",
    "newUser",
    "passkeyUser",
    "spareUser",
    "operator",
    "limits",
]


class Command(BaseCommand):
    help = (
        "Create the sandbox programs, customers, accounts, users, cards and applications. "
        "Safe to rerun: nothing is made twice and the same object is printed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print only the JSON object.")

    def handle(self, *args, **options):
        with transaction.atomic():
            manifest, _ = SandboxManifest.objects.select_for_update().get_or_create(key=MANIFEST_KEY)
            ctx = SandboxContext(previous=manifest.data)
            for dotted in settings.SANDBOX_BOOTSTRAP_STEPS:
                import_string(dotted)(ctx)
            output = {key: ctx.output[key] for key in ORDER if key in ctx.output}
            output.update(ctx.output)
            manifest.data = output
            manifest.save()
        text = json.dumps(output, indent=None if options["json"] else 2, sort_keys=False)
        self.stdout.write(text)
