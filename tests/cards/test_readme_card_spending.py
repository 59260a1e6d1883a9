"""The README's money-in and card-spending section works after its walk-through, as written."""

import json
import re
import shutil
from decimal import Decimal

import pytest
import xmlschema

from bankapi.models import Account
from payments.statement_formats import CAMT053_XSD
from tests.kernel.test_readme import README, for_server, run_blocks, walkthrough_script

SECTION = "## Money in and card spending: from an incoming payment to a cleared card spend"


def section_script() -> str:
    section = README.read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_takes_money_in_and_spends_it_with_the_card(transactional_db, live_server, sandbox, tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + section_script(), live_server.url)

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    answers = [json.loads(block)["data"] for block in re.findall(r"^\{\n.*?^\}$", result.stdout, re.S | re.M)]
    incoming, held, cleared, listed, authorizations, statement = answers[-6:]
    assert (incoming["amount"], incoming["endToEndId"]) == ("120.00", "INV-42")
    assert (
        str(Account.objects.get(id=sandbox["customer"]["accountId"]).balance) == statement["closingBalance"]
    )
    assert Decimal(held["balance"]) - Decimal(held["available"]) >= Decimal("4.50")
    assert (cleared["status"], cleared["clearedAmount"], cleared["amount"]) == ("CLEARED", "4.00", "4.50")
    assert [p["incomingPaymentId"] for p in listed["incomingPayments"]] == [incoming["incomingPaymentId"]]
    assert authorizations["authorizations"][0]["authorizationId"] == cleared["authorizationId"]
    credit, debit = statement["entries"][-2:]
    assert (credit["creditDebit"], credit["amount"], credit["reference"], credit["endToEndId"]) == (
        "CRDT",
        "120.00",
        "Invoice 42",
        "INV-42",
    )
    assert (debit["creditDebit"], debit["amount"], debit["reference"]) == ("DBIT", "4.00", "Corner Coffee")
    document = next(tmp_path.glob("scratch/*/card-statement.xml"))
    xmlschema.XMLSchema(str(CAMT053_XSD)).validate(str(document))
    text = document.read_text()
    assert "<Dbtr><Pty><Nm>Acme Ltd</Nm></Pty></Dbtr>" in text
    assert "<Cdtr><Pty><Nm>Corner Coffee</Nm></Pty></Cdtr>" in text
