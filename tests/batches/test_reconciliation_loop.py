"""The loop a treasury system closes, with an ordinary third-party pain.001
generator (`sepaxml`): a file paying from the sandbox's EUR account by its IBAN,
uploaded, initiated, submitted and paid; its pain.002; then the camt.053 of the
day matched to the file by EndToEndId, one to one; then one payment returned by
the payee's bank and matched again."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from lxml import etree

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account
from payments.statement_formats import CAMT053_XSD
from tests.batches.iso20022 import report, statuses, upload
from tests.batches.test_submit import totp

sepaxml = pytest.importorskip("sepaxml")

pytestmark = pytest.mark.django_db
CAMT = {"c": "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"}
# Real payees: a German IBAN and its bank's BIC, as the payee's bank registry has them.
PAYEES = [
    ("Hans Lieferant", "DE02120300000000202051", "BYLADEM1001"),
    ("Marie Fournisseur", "DE89370400440532013000", "COBADEFFXXX"),
]


def _pain001(debtor_name: str, debtor_iban: str) -> tuple[bytes, dict[str, dict]]:
    """A pain.001.001.03 file of three EUR payments, as sepaxml writes it, and
    what was sent per EndToEndId."""
    transfer = sepaxml.SepaTransfer(
        {"name": debtor_name, "IBAN": debtor_iban, "BIC": "COBADEFFXXX", "batch": True, "currency": "EUR"},
        clean=True,
    )
    sent = {}
    for index, cents in enumerate((1250, 999, 40000)):
        name, iban, bic = PAYEES[index % 2]
        end_to_end_id = f"ERP-INV-{index + 1}"
        transfer.add_payment(
            {
                "name": name,
                "IBAN": iban,
                "BIC": bic,
                "amount": cents,
                "execution_date": datetime.now(UTC).date(),
                "description": f"Invoice {index + 1}",
                "endtoend_id": end_to_end_id,
            }
        )
        sent[end_to_end_id] = {"amount": f"{Decimal(cents) / 100:.2f}", "reference": f"Invoice {index + 1}"}
    return transfer.export(validate=True), sent


def _camt053(api, auth, account: Account) -> etree._Element:
    day = str(datetime.now(UTC).date())
    response = api.get(
        f"/v1/customers/{account.customer_id}/accounts/{account.id}/statements",
        {"from": day, "to": day, "format": "camt053"},
        **auth,
    )
    assert response.status_code == 200, response.content
    document = etree.fromstring(response.content)
    schema = etree.XMLSchema(etree.parse(str(CAMT053_XSD)))
    assert schema.validate(document), schema.error_log
    return document


def _entries_by_end_to_end_id(document: etree._Element) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for entry in document.iterfind(".//c:Ntry", CAMT):
        refs = entry.find("c:NtryDtls/c:TxDtls/c:Refs", CAMT)
        found.setdefault(refs.findtext("c:EndToEndId", namespaces=CAMT), []).append(
            {
                "amount": entry.findtext("c:Amt", namespaces=CAMT),
                "currency": entry.find("c:Amt", CAMT).get("Ccy"),
                "creditDebit": entry.findtext("c:CdtDbtInd", namespaces=CAMT),
                "messageId": refs.findtext("c:MsgId", namespaces=CAMT),
                "informationId": refs.findtext("c:PmtInfId", namespaces=CAMT),
                "requestId": refs.findtext("c:TxId", namespaces=CAMT),
                "reference": entry.findtext("c:NtryDtls/c:TxDtls/c:RmtInf/c:Ustrd", namespaces=CAMT),
                "returnReason": entry.findtext("c:NtryDtls/c:TxDtls/c:RtrInf/c:Rsn/c:Cd", namespaces=CAMT),
            }
        )
    return found


def _balance(document: etree._Element, code: str) -> tuple[str, str]:
    [found] = [
        balance
        for balance in document.iterfind(".//c:Stmt/c:Bal", CAMT)
        if balance.findtext("c:Tp/c:CdOrPrtry/c:Cd", namespaces=CAMT) == code
    ]
    return found.findtext("c:Amt", namespaces=CAMT), found.findtext("c:CdtDbtInd", namespaces=CAMT)


def test_a_sepaxml_file_is_paid_and_matched_to_its_statement_by_end_to_end_id(api, sandbox):
    # Given the sandbox customer and its EUR account, known to the ERP by IBAN only.
    customer = sandbox["customer"]
    user = User.objects.get(email=customer["email"])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(user).access_token}"}
    account = Account.objects.get(iban=customer["eurAccountIban"])
    assert str(account.id) == customer["eurAccountId"] and account.currency == "EUR"
    route = f"/v1/customers/{customer['customerId']}/batch-payments"
    document, sent = _pain001("Sandbox Customer One", customer["eurAccountIban"])
    message_id = etree.fromstring(document).findtext(".//{*}GrpHdr/{*}MsgId")

    # When the file is uploaded as generated, initiated, submitted and paid.
    uploaded = upload(api, auth, document, url=f"{route}/files", content_type="text/xml")
    assert uploaded.status_code == 200, uploaded.content
    batch_id = uploaded.json()["requestId"]
    initiated = api.post(route, {"action": "initiate", "batchId": batch_id}, format="json", **auth)
    assert initiated.status_code == 200, initiated.json()
    sca = initiated.json()["data"]["scaChallenge"]
    body = {"action": "submit", "batchId": batch_id, "scaChallenge": sca, "confirmation": totp(user)}
    submitted = api.post(route, body, format="json", **auth)
    assert submitted.status_code == 200, submitted.json()

    # Then its pain.002 says every payment was paid (ACSC).
    paid = statuses(report(api, auth, batch_id, url=route))
    assert (paid["group"], paid["messageId"]) == ("ACSC", message_id)
    accepted = [tx[0] for _, transactions in paid["instructions"] for tx in transactions if tx[1] == "ACSC"]
    assert sorted(accepted) == sorted(sent)

    # And the day's camt.053 (valid against its XSD) has each of them exactly once,
    # a debit of its amount under the file's ids.
    matched = _entries_by_end_to_end_id(_camt053(api, auth, account))
    for end_to_end_id, what in sent.items():
        [entry] = matched[end_to_end_id]
        assert (entry["creditDebit"], entry["amount"], entry["currency"]) == ("DBIT", what["amount"], "EUR")
        assert (entry["messageId"], entry["reference"], entry["returnReason"]) == (
            message_id,
            what["reference"],
            None,
        )
        assert entry["informationId"] and entry["requestId"]
    # Bookings only: besides the sandbox's funding credit, one debit per paid
    # item, and no line for the batch's holds or their release.
    assert {key: [e["creditDebit"] for e in entries] for key, entries in matched.items()} == {
        **{end_to_end_id: ["DBIT"] for end_to_end_id in sent},
        "NOTPROVIDED": ["CRDT"],
    }
    # Nothing is held once every item is paid: the closing available balance is the closing balance.
    document = _camt053(api, auth, account)
    assert _balance(document, "CLAV") == _balance(document, "CLBD")

    # When the payee's bank sends the second payment back (once it settled).
    returned = matched["ERP-INV-2"][0]["requestId"]
    assert api.post(f"/v1/sandbox/payment-requests/{returned}/settle", **auth).status_code == 200
    answer = api.post(
        f"/v1/sandbox/payment-requests/{returned}/return", {"reasonCode": "AC04"}, format="json", **auth
    )
    assert answer.status_code == 200, answer.json()

    # Then the statement matches it again: its debit, and a credit under the same
    # EndToEndId carrying the return reason; the others are untouched.
    rematched = _entries_by_end_to_end_id(_camt053(api, auth, account))
    debit, credit = rematched["ERP-INV-2"]
    assert debit == matched["ERP-INV-2"][0]
    assert (credit["creditDebit"], credit["amount"], credit["returnReason"]) == ("CRDT", "9.99", "AC04")
    assert credit["requestId"] == returned and credit["messageId"] == message_id
    assert {key: rematched[key] for key in ("ERP-INV-1", "ERP-INV-3")} == {
        key: matched[key] for key in ("ERP-INV-1", "ERP-INV-3")
    }
