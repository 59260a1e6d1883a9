from django.core.management.base import BaseCommand, CommandError

from bankapi.crypto import field_keys
from bankapi.management.progress import progress
from bankapi.ops.key_rotation import BATCH_SIZE, encrypted_models, model_keys_rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every encrypted column (card PAN and CVV, TOTP seeds, webhook "
        "secrets...) with the newest key of FIELD_ENCRYPTION_KEY (the first). Put the "
        "new key first, keep the old ones after it until this has finished. Resumable: "
        "run it again after an interruption; a second run changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch-size",
            type=int,
            default=BATCH_SIZE,
            help=f"Rows per transaction (default {BATCH_SIZE}).",
        )

    def handle(self, *args, **options):
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        if len(field_keys()) < 2:
            self.stderr.write(
                "FIELD_ENCRYPTION_KEY holds one key: values under any other key cannot be read. "
                "Put the new key first and the old one after it."
            )
        rows = values = 0
        for target in encrypted_models():
            total = target.model._base_manager.count()
            with progress(self.stdout, total=total, desc=target.label) as bar:
                count = model_keys_rotate(target, batch_size=options["batch_size"], on_batch=bar.update)
            rows += count.rows
            values += count.values
            self.stdout.write(f"{target.label}: {count.values} value(s) re-encrypted in {count.rows} row(s).")
        self.stdout.write(f"Done: {values} value(s) re-encrypted in {rows} row(s); all under the newest key.")
