"""The README's statements section works after its walk-through, as written."""

import csv
import io
import shutil
from decimal import Decimal

import pytest
import xmlschema

from bankapi.models import Account
from payments.statement_formats import CAMT053_XSD, CSV_HEADER
from tests.support.readme import readme_section_answers

SECTION = "## Statements, balances and limits: reconciling an account"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_reconciles_the_walkthroughs_account(transactional_db, live_server, sandbox, tmp_path):
    statement, balance, limits = readme_section_answers(SECTION, live_server.url, sandbox, tmp_path)[-3:]

    account = Account.objects.get(id=sandbox["customer"]["accountId"])
    # The walk-through's payment of 25.00, accepted today.
    assert ("DBIT", "25.00", "Invoice 42") in [
        (e["creditDebit"], e["amount"], e["reference"]) for e in statement["entries"]
    ]
    assert Decimal(statement["closingBalance"]) == account.balance
    assert balance["balance"] == statement["openingBalance"]
    assert Decimal(limits["daily"]["used"]) >= Decimal("25.00")
    rows = list(
        csv.DictReader(io.StringIO(next(tmp_path.glob("scratch/*/statement.csv")).read_text(), newline=""))
    )
    assert [row["entryId"] for row in rows] == [e["entryId"] for e in statement["entries"]]
    assert list(rows[0]) == list(CSV_HEADER)
    xmlschema.XMLSchema(str(CAMT053_XSD)).validate(str(next(tmp_path.glob("scratch/*/statement.xml"))))
