"""A file's `PmtId/EndToEndId` follows the SEPA identifier set: letters a-z and
A-Z, digits, space and `/ - ? : ( ) . , ' +`, not starting or ending with `/`,
no `//`. Any other makes its transaction invalid with that reason (reported in
the draft and its status report, as every refused transaction is), and is never
paid, so never printed in a statement: one with U+202E used to be, in a CSV line."""

from datetime import UTC, datetime

import pytest

from bench.pain001 import V03, V09, Instruction, Tx, pain001, scan
from tests.batches.conftest import URL
from tests.batches.iso20022 import report, statuses, upload
from tests.batches.test_submit import totp

pytestmark = pytest.mark.django_db
PAYEE = scan("200000", "55779911")
CHARACTERS = "letters a-z and A-Z, digits, space and / - ? : ( ) . , ' +"
REFUSED = {
    "right-to-left override": ("INV\u202e1", "U+202E at position 4 is not a SEPA identifier character"),
    "left-to-right isolate": ("INV\u20661", "U+2066 at position 4 is not a SEPA identifier character"),
    "zero-width space": ("INV\u200b1", "U+200B at position 4 is not a SEPA identifier character"),
    "byte order mark": ("INV\ufeff1", "U+FEFF at position 4 is not a SEPA identifier character"),
    "at sign": ("pay@example", "U+0040 at position 4 is not a SEPA identifier character"),
    "underscore": ("INV_1", "U+005F at position 4 is not a SEPA identifier character"),
    "double slash": ("INV//1", "must not hold // (at position 4)."),
    "leading slash": ("/INV1", "must not start or end with /."),
    "trailing slash": ("INV1/", "must not start or end with /."),
}
TAKEN = ["E2E-1", "ok (1) +2 ?:.,'", "A/B-C", "x" * 35]


def file_of(account: dict, end_to_end_ids: list[str], version: str) -> bytes:
    debtor = scan(account["sortCode"], account["accountNumber"])
    transactions = [
        Tx(end_to_end_id, "1.00", PAYEE, remittance=["Invoice 1"]) for end_to_end_id in end_to_end_ids
    ]
    return pain001([Instruction(debtor, transactions)], version=version)


def draft_of(api, auth, body: bytes) -> tuple[str, dict]:
    uploaded = upload(api, auth, body)
    assert uploaded.status_code == 200, uploaded.content
    draft_id = uploaded.json()["requestId"]
    return draft_id, api.get(f"{URL}/{draft_id}", **auth).json()["data"]["draft"]


@pytest.mark.parametrize("version", [V03, V09])
@pytest.mark.parametrize("kind", REFUSED.keys())
def test_an_end_to_end_id_outside_the_sepa_set_makes_its_transaction_invalid(
    api, custodian_auth, custodian_accounts, version, kind
):
    end_to_end_id, reason = REFUSED[kind]

    draft_id, draft = draft_of(
        api, custodian_auth, file_of(custodian_accounts[0], ["E2E-1", end_to_end_id], version)
    )

    assert [entry["index"] for entry in draft["validPayments"]] == [0]
    [invalid] = draft["invalidPayments"]
    assert invalid["index"] == 1
    assert [text.split(": ", 1)[0] for text in invalid["reasons"]] == ["endToEndId"]
    assert invalid["reasons"][0].startswith(f"endToEndId: {reason}")
    if "SEPA" in reason:
        assert invalid["reasons"][0].endswith(f"({CHARACTERS}).")
    [(_, transactions)] = statuses(report(api, custodian_auth, draft_id))["instructions"]
    assert [(status, code) for _, status, code, _ in transactions] == [("ACTC", None), ("RJCT", "NARR")]


@pytest.mark.parametrize("version", [V03, V09])
def test_end_to_end_ids_of_the_sepa_set_are_taken(api, custodian_auth, custodian_accounts, version):
    _, draft = draft_of(api, custodian_auth, file_of(custodian_accounts[0], TAKEN, version))

    assert draft["invalidPayments"] == []
    assert [entry["payment"]["endToEndId"] for entry in draft["validPayments"]] == TAKEN


@pytest.mark.parametrize("version", [V03, V09])
def test_a_refused_end_to_end_id_never_reaches_a_statement(
    api, custodian_auth, custodian_user, custodian_accounts, version
):
    payer = custodian_accounts[0]
    bidi = "INV\u202e1"
    draft_id, _ = draft_of(api, custodian_auth, file_of(payer, ["E2E-PAID", bidi], version))

    initiated = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **custodian_auth)
    assert initiated.status_code == 200, initiated.content
    sca = initiated.json()["data"]["scaChallenge"]
    body = {
        "action": "submit",
        "batchId": draft_id,
        "scaChallenge": sca,
        "confirmation": totp(custodian_user),
    }
    submitted = api.post(URL, body, format="json", **custodian_auth)
    assert submitted.status_code == 200, submitted.content
    assert submitted.json()["data"]["counts"] == {"total": 2, "valid": 1, "invalid": 1}

    day = str(datetime.now(UTC).date())
    url = f"/v1/customers/{payer['customerId']}/accounts/{payer['accountId']}/statements"
    for fmt in ("json", "csv", "camt053"):
        statement = api.get(url, {"from": day, "to": day, "format": fmt}, **custodian_auth)
        assert statement.status_code == 200, statement.content
        text = statement.content.decode()
        assert "E2E-PAID" in text, fmt
        assert "\u202e" not in text and "INV" not in text, fmt
