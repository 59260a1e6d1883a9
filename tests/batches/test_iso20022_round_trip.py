"""A pain.001 file from upload to a paid batch and its pain.002, in both versions
and with every confirmation method; JSON batches reported in pain.002 too."""

from decimal import Decimal

import pytest

from authn.services.stepup import step_up_pin_set
from batches.models import Batch, BatchItem
from bench.pain001 import V03, V09, Instruction, Tx, iban, pain001, scan
from payments.models import PaymentRequest
from tests.batches.conftest import URL, balance, payment, verify
from tests.batches.iso20022 import FILES_URL, report, statuses, upload
from tests.batches.test_submit import totp
from tests.support.factories import funded_account, uk_account
from tests.support.passkeys import enrol_passkey

pytestmark = pytest.mark.django_db
PAYEE_IBAN = iban("DE89370400440532013000", "COBADEFFXXX")
PAYEE_UK = scan("200000", "55779911")


def three_payments(first: dict, second: dict, version: str, msg_id: str = "ERP-2026-11-25-001") -> bytes:
    """Two instructions: two valid payments and one in a currency the payer does not hold."""
    return pain001(
        [
            Instruction(
                debtor=scan(first["sortCode"], first["accountNumber"]),
                execution_date="2026-11-27",
                transactions=[
                    Tx("E2E-A", "10.00", PAYEE_UK, remittance=["Invoice 1", "second line"]),
                    Tx("E2E-B", "2.50", PAYEE_IBAN, creditor_name="Hans Payee", currency="EUR"),
                ],
            ),
            Instruction(
                debtor=scan(second["sortCode"], second["accountNumber"]),
                execution_date="2026-11-28",
                transactions=[Tx("E2E-C", "5.25", PAYEE_IBAN, creditor_name="Hans Payee", remittance=None)],
            ),
        ],
        msg_id=msg_id,
        version=version,
    )


def confirm(api, auth, url: str, user, method: str, sca: dict, pin: str | None = None) -> dict:
    if method == "totp":
        return totp(user)
    if method == "pin":
        return {"method": "pin", "pin": pin}
    authenticator = enrol_passkey(api, user.email, str(user.program_id))
    session = api.post(url, {"action": "passkey-challenge", "scaChallenge": sca}, format="json", **auth)
    assert session.status_code == 200, session.json()
    options = session.json()["data"]
    return {
        "method": "passkey",
        "passkeySession": options["passkeySession"],
        "assertion": authenticator.get(options["fido2options"]),
    }


@pytest.mark.parametrize("version", [V03, V09])
@pytest.mark.parametrize("method", ["totp", "passkey"])
def test_a_custodians_file_becomes_a_paid_batch_and_its_status_report(
    api, custodian_auth, custodian_user, custodian_accounts, version, method
):
    first, second = custodian_accounts
    before = (balance(first["accountId"]), balance(second["accountId"]))

    uploaded = upload(api, custodian_auth, three_payments(first, second, version))

    assert uploaded.status_code == 200, uploaded.json()
    assert uploaded.json()["status"] == "DRAFT"
    draft_id = uploaded.json()["requestId"]
    draft = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert draft["payloadStatus"] == "COMPLETE" and draft["paymentsCount"] == 3
    assert [(e["index"], e["payment"]["endToEndId"]) for e in draft["validPayments"]] == [
        (0, "E2E-A"),
        (2, "E2E-C"),
    ]
    assert draft["validPayments"][0]["payment"] == {
        "payer": {
            "account": {"type": "uk", "sortCode": first["sortCode"], "accountNumber": first["accountNumber"]}
        },
        "payee": {
            "name": "Jane Payee",
            "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
        },
        "reference": "Invoice 1",
        "amount": "10.00",
        "endToEndId": "E2E-A",
        "currency": "GBP",
    }
    # No remittance: the EndToEndId is the reference.
    assert draft["validPayments"][1]["payment"]["reference"] == "E2E-C"
    assert draft["invalidPayments"] == [
        {
            "index": 1,
            "payment": draft["invalidPayments"][0]["payment"],
            "reasons": ["amount: in EUR, not the payer account's currency GBP."],
        }
    ]
    drafted = statuses(report(api, custodian_auth, draft_id))
    assert (drafted["group"], drafted["messageId"], drafted["messageName"]) == (
        "PART",
        "ERP-2026-11-25-001",
        version,
    )
    assert drafted["instructions"] == [
        (
            "PMT-1",
            [
                ("E2E-A", "ACTC", None, None),
                ("E2E-B", "RJCT", "AM03", "amount: in EUR, not the payer account's currency GBP."),
            ],
        ),
        ("PMT-2", [("E2E-C", "ACTC", None, None)]),
    ]

    initiated = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **custodian_auth)
    assert initiated.status_code == 200, initiated.json()
    assert initiated.json()["data"]["totalAmount"] == "15.25"
    sca = initiated.json()["data"]["scaChallenge"]
    confirmation = confirm(api, custodian_auth, URL, custodian_user, method, sca)
    body = {"action": "submit", "batchId": draft_id, "scaChallenge": sca, "confirmation": confirmation}
    submitted = api.post(URL, body, format="json", **custodian_auth)

    assert submitted.status_code == 200, submitted.json()
    assert submitted.json()["data"]["batchId"] == draft_id
    assert submitted.json()["data"]["counts"] == {"total": 3, "valid": 2, "invalid": 1}
    batch = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]
    assert batch["status"] == "PARTIALLY_FAILED"
    items = batch["paymentsBatchItems"]
    assert [(i["endToEndId"], i["status"], i["scheduledDate"]) for i in items] == [
        ("E2E-A", "SUCCESS", "2026/11/27"),
        ("E2E-B", "FAILED", "2026/11/27"),
        ("E2E-C", "SUCCESS", "2026/11/28"),
    ]
    assert items[2]["payee"]["iban"] == "DE89370400440532013000" and items[2]["payee"]["bic"] == "COBADEFFXXX"
    assert (balance(first["accountId"]), balance(second["accountId"])) == (
        before[0] - Decimal("10.00"),
        before[1] - Decimal("5.25"),
    )
    assert PaymentRequest.objects.filter(batch_item__batch_id=draft_id).count() == 2
    assert Batch.objects.get(id=draft_id).message_id == "ERP-2026-11-25-001"
    for pain002 in ("pain.002.001.03", "pain.002.001.12"):
        paid = statuses(report(api, custodian_auth, draft_id, pain002))
        assert (paid["group"], paid["messageId"], paid["messageName"]) == (
            "PART",
            "ERP-2026-11-25-001",
            version,
        )
        assert paid["instructions"] == [
            (
                "PMT-1",
                [
                    ("E2E-A", "ACSC", None, None),
                    ("E2E-B", "RJCT", "AM03", "amount: in EUR, not the payer account's currency GBP."),
                ],
            ),
            ("PMT-2", [("E2E-C", "ACSC", None, None)]),
        ]


@pytest.mark.parametrize("version", [V03, V09])
def test_a_customers_own_file_confirmed_with_its_pin(api, business, version):
    step_up_pin_set(user=business.user, pin="2468")
    auth = business.access
    account = funded_account(business.customer, "100.00", **uk_account())
    url = f"/v1/customers/{business.customer.id}/batch-payments"
    file = pain001(
        [Instruction(scan(account.sort_code, account.account_number), [Tx("PIN-1", "3.00", PAYEE_UK)])],
        msg_id="PIN-FILE",
        version=version,
    )

    uploaded = upload(api, auth, file, url=f"{url}/files")

    assert uploaded.status_code == 200, uploaded.json()
    draft_id = uploaded.json()["requestId"]
    sca = api.post(url, {"action": "initiate", "batchId": draft_id}, format="json", **auth).json()["data"][
        "scaChallenge"
    ]
    body = {"action": "submit", "batchId": draft_id, "scaChallenge": sca}
    submitted = api.post(
        url, body | {"confirmation": {"method": "pin", "pin": "2468"}}, format="json", **auth
    )
    assert submitted.status_code == 200, submitted.json()
    paid = statuses(report(api, auth, draft_id, url=url))
    assert paid["group"] == "ACSC"
    assert paid["instructions"] == [("PMT-1", [("PIN-1", "ACSC", None, None)])]
    assert BatchItem.objects.get(batch_id=draft_id).end_to_end_id == "PIN-1"


def test_a_json_batch_is_reported_under_its_own_ids(api, custodian_auth, custodian_user, custodian_accounts):
    first = custodian_accounts[0]
    payments = [payment(first, "1.00"), payment(first, "0")]
    draft_id = verify(api, custodian_auth, payments)

    drafted = statuses(report(api, custodian_auth, draft_id))

    hex_id = draft_id.replace("-", "")
    assert (drafted["group"], drafted["messageId"], drafted["messageName"]) == (
        "PART",
        hex_id,
        "pain.001.001.09",
    )
    [(instruction_id, entries)] = drafted["instructions"]
    assert instruction_id == hex_id and [e[1:3] for e in entries] == [("ACTC", None), ("RJCT", "NARR")]
    sca = api.post(
        URL,
        {"action": "initiate", "payments": payments, "batchId": draft_id},
        format="json",
        **custodian_auth,
    ).json()["data"]["scaChallenge"]
    body = {
        "action": "submit",
        "payments": payments,
        "batchId": draft_id,
        "scaChallenge": sca,
        "confirmation": totp(custodian_user),
    }
    assert api.post(URL, body, format="json", **custodian_auth).status_code == 200
    # Each entry was reported under the id its item then took, and the path takes the id without hyphens.
    items = BatchItem.objects.filter(batch_id=draft_id).order_by("index")
    paid = statuses(report(api, custodian_auth, hex_id))
    assert paid["instructions"] == [
        (hex_id, [(items[0].id.hex, "ACSC", None, None), (items[1].id.hex, "RJCT", "NARR", entries[1][3])])
    ]
    assert [e[0] for e in entries] == [item.id.hex for item in items]
    shown = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["paymentsBatchItems"]
    assert [item["endToEndId"] for item in shown] == [item.id.hex for item in items]


def test_a_draft_still_being_verified_is_received_without_transactions(
    plain_api, custodian_auth, custodian_accounts
):
    # plain_api runs no after-commit work: the verification task never ran.
    first = custodian_accounts[0]
    response = upload(
        plain_api,
        custodian_auth,
        pain001(
            [Instruction(scan(first["sortCode"], first["accountNumber"]), [Tx("R-1", "1.00", PAYEE_UK)])]
        ),
    )
    assert response.status_code == 200, response.json()

    received = statuses(report(plain_api, custodian_auth, response.json()["requestId"], "pain.002.001.12"))

    assert (received["group"], received["instructions"]) == ("RCVD", [])


def test_reason_codes_follow_the_first_reason_of_each_refused_payment(
    api, custodian_auth, custodian_accounts
):
    first = custodian_accounts[0]
    debtor = scan(first["sortCode"], first["accountNumber"])
    file = pain001(
        [
            Instruction(
                debtor,
                [
                    Tx("BAD-IBAN", "1.00", iban("DE89370400440532013001")),
                    Tx("BAD-SCAN", "1.00", scan("20000", "5577991")),
                    Tx("TOO-PRECISE", "1.001", PAYEE_UK),
                ],
            ),
            Instruction(scan("999999", "99999999"), [Tx("NOT-MINE", "1.00", PAYEE_UK)]),
        ]
    )
    draft_id = upload(api, custodian_auth, file).json()["requestId"]

    reported = statuses(report(api, custodian_auth, draft_id))

    codes = [(e[0], e[2]) for _, entries in reported["instructions"] for e in entries]
    assert codes == [
        ("BAD-IBAN", "AC01"),
        ("BAD-SCAN", "AC01"),
        ("TOO-PRECISE", "NARR"),
        ("NOT-MINE", "AC04"),
    ]
    assert reported["group"] == "RJCT"
    # A JSON batch's BIC of a bad shape: RC01 as well.
    bad_bic = {
        "name": "Hans",
        "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFF1"},
    }
    json_draft = verify(api, custodian_auth, [payment(first, "1.00", payee=bad_bic)])
    [(_, [(_, status, code, _)])] = statuses(report(api, custodian_auth, json_draft))["instructions"]
    assert (status, code) == ("RJCT", "RC01")


def test_management_reads_a_batchs_report_but_never_a_drafts(
    api, management_auth, custodian_auth, custodian_user, custodian_accounts, program
):
    first = custodian_accounts[0]
    file = pain001(
        [Instruction(scan(first["sortCode"], first["accountNumber"]), [Tx("M-1", "1.00", PAYEE_UK)])]
    )
    draft_id = upload(api, custodian_auth, file).json()["requestId"]
    program_query = f"programId={program.id}"

    hidden = api.get(f"{URL}/{draft_id}/status-report?{program_query}", **management_auth)

    assert hidden.status_code == 404 and hidden.json()["code"] == "RESOURCE_NOT_FOUND"
    sca = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **custodian_auth).json()[
        "data"
    ]["scaChallenge"]
    body = {
        "action": "submit",
        "batchId": draft_id,
        "scaChallenge": sca,
        "confirmation": totp(custodian_user),
    }
    assert api.post(URL, body, format="json", **custodian_auth).status_code == 200
    seen = api.get(f"{URL}/{draft_id}/status-report?{program_query}", **management_auth)
    assert seen.status_code == 200 and b"<TxSts>ACSC</TxSts>" in seen.content


def test_a_report_in_an_unknown_version_is_a_400(api, custodian_auth, custodian_accounts):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0], "1.00")])

    response = api.get(f"{URL}/{draft_id}/status-report?version=pain.002.001.10", **custodian_auth)

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": "version", "message": response.json()["message"]}]


def test_an_xml_accept_header_still_gets_the_report_and_json_errors(api, custodian_auth, custodian_accounts):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0], "1.00")])

    found = api.get(f"{URL}/{draft_id}/status-report", HTTP_ACCEPT="application/xml", **custodian_auth)
    missing = api.get(
        f"{URL}/00000000-0000-0000-0000-000000000000/status-report",
        HTTP_ACCEPT="application/xml",
        **custodian_auth,
    )

    assert found.status_code == 200 and found["Content-Type"] == "application/xml"
    assert missing.status_code == 404 and missing.json()["code"] == "RESOURCE_NOT_FOUND"


def test_files_url_is_not_a_batch_id(api, custodian_auth):
    assert api.get(FILES_URL, **custodian_auth).status_code == 405
