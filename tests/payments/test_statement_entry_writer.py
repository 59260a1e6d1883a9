"""Statement entries are written by the ledger's own module only: every other
module that books money (settlement, returns, funding) asks it."""

import re
from pathlib import Path

from django.conf import settings

WRITES = re.compile(
    r"(?<!class )StatementEntry\("
    r"|StatementEntry\.objects\.(create|bulk_create|get_or_create|update_or_create)"
)
APPS = ["bankapi", "payments", "batches", "cards", "onboarding", "authn", "events", "approvals", "audit"]


def test_only_the_ledger_writes_statement_entries():
    root = Path(settings.BASE_DIR)
    writers = sorted(
        str(path.relative_to(root))
        for app in APPS
        for path in (root / app).rglob("*.py")
        if "migrations" not in path.parts and WRITES.search(path.read_text())
    )

    assert writers == ["payments/ledger/entries.py"]
