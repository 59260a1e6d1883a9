"""The README's money-in and card-spending section works after its walk-through, as written."""

import shutil
from decimal import Decimal

import pytest
import xmlschema

from bankapi.models import Account
from payments.statement_formats import CAMT053_XSD
from tests.support.readme import readme_section_answers

SECTION = "## Money in and card spending: from an incoming payment to a cleared card spend"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_takes_money_in_and_spends_it_with_the_card(transactional_db, live_server, sandbox, tmp_path):
    answers = readme_section_answers(SECTION, live_server.url, sandbox, tmp_path)

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
