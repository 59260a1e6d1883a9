"""Every refusal of a pain.001 upload: the answer the caller sees, and nothing made.

Hostile XML (entity expansion, external entities and DTDs) is refused without
expanding, reading or fetching anything."""

import io
import socket
import threading

import pytest

from batches.models import Batch, Draft
from bench.pain001 import V03, V09, Instruction, Tx, pain001, scan
from tests.batches.conftest import URL, payment
from tests.batches.iso20022 import FILES_URL, upload
from tests.batches.test_submit import totp

pytestmark = pytest.mark.django_db
PAYEE = scan("200000", "55779911")
NAMESPACE = "urn:iso:std:iso:20022:tech:xsd:pain.001.001.03"


def one_payment(account: dict, msg_id: str = "MSG-1", version: str = V03) -> bytes:
    debtor = scan(account["sortCode"], account["accountNumber"])
    return pain001([Instruction(debtor, [Tx("E-1", "1.00", PAYEE)])], msg_id=msg_id, version=version)


def refused(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert (body["success"], body["code"]) == (False, code)
    assert not Draft.objects.exists()
    return body


def fields(body: dict) -> list[str]:
    return [error["field"] for error in body["errors"]]


def test_another_content_type_is_a_415(api, custodian_auth, custodian_accounts):
    body = one_payment(custodian_accounts[0])

    for content_type in ("application/json", "text/plain", "application/pdf"):
        refused(upload(api, custodian_auth, body, content_type=content_type), 415, "UNSUPPORTED_MEDIA_TYPE")


def test_text_xml_and_bytes_are_taken_as_application_xml(api, custodian_auth, custodian_accounts):
    for index, content_type in enumerate(("text/xml", "Text/XML; charset=utf-8", "application/octet-stream")):
        body = one_payment(custodian_accounts[0], msg_id=f"MSG-TEXT-{index}")
        response = upload(api, custodian_auth, body, content_type=content_type)
        assert response.status_code == 200, response.content
        assert Draft.objects.filter(id=response.json()["requestId"]).exists()


def test_a_charset_parameter_is_taken(api, custodian_auth, custodian_accounts):
    response = upload(
        api, custodian_auth, one_payment(custodian_accounts[0]), content_type="application/xml; charset=utf-8"
    )
    assert response.status_code == 200, response.json()


def test_a_body_over_16_mib_is_a_413_before_it_is_read(api, custodian_auth, custodian_accounts):
    padding = b"<!--" + b"x" * (16 * 1024 * 1024) + b"-->"

    refused(
        upload(api, custodian_auth, one_payment(custodian_accounts[0]) + padding), 413, "PAYLOAD_TOO_LARGE"
    )


def chunked(client, path: str, body: bytes, **headers):
    """A body a WSGI server decoded from chunks: no Content-Length, only the stream."""
    return client.request(
        **{
            "HTTP_TRANSFER_ENCODING": "chunked",
            "wsgi.input": io.BytesIO(body),
            "wsgi.input_terminated": True,
            "CONTENT_TYPE": "application/xml",
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            **headers,
        }
    )


def test_a_chunked_body_is_counted_while_read(api, custodian_auth, custodian_accounts):
    small = one_payment(custodian_accounts[0])
    padding = b"<!--" + b"x" * (16 * 1024 * 1024) + b"-->"

    refused(chunked(api, FILES_URL, small + padding, **custodian_auth), 413, "PAYLOAD_TOO_LARGE")
    taken = chunked(api, FILES_URL, small, **custodian_auth)
    assert taken.status_code == 200, taken.json()
    assert Draft.objects.get().message_id == "MSG-1"


@pytest.mark.parametrize(
    "body, field",
    [
        (b"", "body"),
        (b"<Document xmlns='" + NAMESPACE.encode() + b"'><CstmrCdtTrfInitn>", "body"),
        (b"not xml at all", "body"),
    ],
)
def test_xml_that_is_not_well_formed_is_a_400(api, custodian_auth, body, field):
    assert fields(refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")) == [field]


def test_another_message_or_namespace_is_a_400(api, custodian_auth, custodian_accounts):
    valid = one_payment(custodian_accounts[0])

    for other in ("pain.001.001.02", "pain.008.001.02", "pain.002.001.03"):
        body = valid.replace(NAMESPACE.encode(), f"urn:iso:std:iso:20022:tech:xsd:{other}".encode())
        assert fields(refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")) == ["Document"]
    unqualified = valid.replace(f' xmlns="{NAMESPACE}"'.encode(), b"")
    assert fields(refused(upload(api, custodian_auth, unqualified), 400, "VALIDATION_ERROR")) == ["Document"]


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE Document [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{n} "{("&lol" + (str(n - 1) if n > 1 else "") + ";") * 10}">'.encode()
        for n in range(1, 10)
    )
    + b']><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.03">&lol9;</Document>'
)


def test_entity_expansion_is_refused_without_expanding(api, custodian_auth):
    body = refused(upload(api, custodian_auth, BILLION_LAUGHS), 400, "VALIDATION_ERROR")

    assert body["errors"] == [
        {"field": "body", "message": "A document type declaration (DTD) is not accepted."}
    ]
    assert b"lollol" not in upload(api, custodian_auth, BILLION_LAUGHS).content


def test_an_external_entity_naming_a_local_file_is_refused_unread(
    api, custodian_auth, custodian_accounts, tmp_path
):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    valid = one_payment(custodian_accounts[0])
    body = valid.replace(
        b"<Document", f'<!DOCTYPE Document [<!ENTITY x SYSTEM "file://{secret}">]><Document'.encode(), 1
    ).replace(b"<MsgId>MSG-1</MsgId>", b"<MsgId>&x;</MsgId>")

    response = upload(api, custodian_auth, body)

    refused(response, 400, "VALIDATION_ERROR")
    assert b"TOP-SECRET-CONTENT" not in response.content
    assert not Batch.objects.exists()


@pytest.fixture
def loopback_listener():
    """A loopback port that records any connection made to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    connections: list = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                connections.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], connections
    stop.set()
    thread.join()
    server.close()


def test_external_dtds_and_parameter_entities_are_refused_unfetched(
    api, custodian_auth, custodian_accounts, loopback_listener
):
    port, connections = loopback_listener
    valid = one_payment(custodian_accounts[0])
    url = f"http://127.0.0.1:{port}/evil.dtd"
    hostile = [
        valid.replace(b"<Document", f'<!DOCTYPE Document SYSTEM "{url}"><Document'.encode(), 1),
        valid.replace(
            b"<Document", f'<!DOCTYPE Document [<!ENTITY % p SYSTEM "{url}"> %p;]><Document'.encode(), 1
        ),
        valid.replace(
            b"<Document", f'<!DOCTYPE Document [<!ENTITY e SYSTEM "{url}">]><Document'.encode(), 1
        ).replace(b"<MsgId>MSG-1</MsgId>", b"<MsgId>&e;</MsgId>"),
    ]

    for body in hostile:
        assert fields(refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")) == ["body"]
    assert connections == []


def test_xsd_violations_name_element_paths_counted_from_one(api, custodian_auth, custodian_accounts):
    debtor = scan(custodian_accounts[0]["sortCode"], custodian_accounts[0]["accountNumber"])
    body = pain001(
        [
            Instruction(debtor, [Tx("A", "1.00", PAYEE), Tx("B", "1.00", PAYEE), Tx("C", "x", PAYEE)]),
            Instruction(debtor, [Tx("D", "1.00", PAYEE, remittance=["fine", "a" * 141])], ctrl_sum="2"),
        ],
        ctrl_sum="5",
    )

    errors = refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")["errors"]

    assert [e["field"] for e in errors] == [
        "CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[3]/Amt/InstdAmt",
        "CstmrCdtTrfInitn/PmtInf[2]/CdtTrfTxInf[1]/RmtInf/Ustrd[2]",
    ]
    assert "'x' is not a valid value" in errors[0]["message"]


def test_at_most_50_xsd_errors_are_listed(api, custodian_auth, custodian_accounts):
    debtor = scan(custodian_accounts[0]["sortCode"], custodian_accounts[0]["accountNumber"])
    body = pain001(
        [Instruction(debtor, [Tx(f"E{n}", "x", PAYEE) for n in range(80)], ctrl_sum="1")], ctrl_sum="1"
    )

    errors = refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")["errors"]

    assert len(errors) == 50
    assert errors[49]["field"] == "CstmrCdtTrfInitn/PmtInf[1]/CdtTrfTxInf[50]/Amt/InstdAmt"


@pytest.mark.parametrize("version", [V03, V09])
def test_control_figures_must_match_the_transactions(api, custodian_auth, custodian_accounts, version):
    debtor = scan(custodian_accounts[0]["sortCode"], custodian_accounts[0]["accountNumber"])
    body = pain001(
        [
            Instruction(debtor, [Tx("A", "1.00", PAYEE)]),
            Instruction(
                debtor, [Tx("B", "2.00", PAYEE), Tx("C", "3.00", PAYEE)], nb_of_txs="3", ctrl_sum="5.01"
            ),
            Instruction(debtor, [Tx("D", "1.00", PAYEE)], with_controls=False),
        ],
        version=version,
        nb_of_txs="5",
        ctrl_sum="7.50",
    )

    errors = refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")["errors"]

    assert [e["field"] for e in errors] == [
        "CstmrCdtTrfInitn/GrpHdr/NbOfTxs",
        "CstmrCdtTrfInitn/GrpHdr/CtrlSum",
        "CstmrCdtTrfInitn/PmtInf[2]/NbOfTxs",
        "CstmrCdtTrfInitn/PmtInf[2]/CtrlSum",
    ]
    assert errors[0]["message"] == "States 5 transactions; there are 4."


def test_more_than_10000_transactions_is_a_400_on_the_group_count(api, custodian_auth, custodian_accounts):
    debtor = scan(custodian_accounts[0]["sortCode"], custodian_accounts[0]["accountNumber"])
    body = pain001(
        [Instruction(debtor, [Tx(f"E{n}", "1.00", PAYEE, remittance=None) for n in range(10_001)])]
    )

    errors = refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")["errors"]

    assert errors == [
        {"field": "CstmrCdtTrfInitn/GrpHdr/NbOfTxs", "message": "At most 10000 transactions per file."}
    ]


def test_a_requested_date_no_payment_can_have_is_a_400(api, custodian_auth, custodian_accounts):
    debtor = scan(custodian_accounts[0]["sortCode"], custodian_accounts[0]["accountNumber"])
    body = pain001([Instruction(debtor, [Tx("A", "1.00", PAYEE)], execution_date="10000-01-01")])

    errors = refused(upload(api, custodian_auth, body), 400, "VALIDATION_ERROR")["errors"]

    assert [e["field"] for e in errors] == ["CstmrCdtTrfInitn/PmtInf[1]/ReqdExctnDt"]


def test_a_known_msgid_is_a_409_naming_the_draft_then_the_batch(
    api, custodian_auth, custodian_user, custodian_accounts, customer, customer_account
):
    first = upload(api, custodian_auth, one_payment(custodian_accounts[0], "ERP-7"))
    draft_id = first.json()["requestId"]

    again = upload(api, custodian_auth, one_payment(custodian_accounts[1], "ERP-7", version=V09))

    assert again.status_code == 409 and again.json()["code"] == "DUPLICATE_MESSAGE"
    assert again.json()["batchId"] == draft_id and f"draft {draft_id}" in again.json()["message"]
    assert Draft.objects.count() == 1
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
    after = upload(api, custodian_auth, one_payment(custodian_accounts[0], "ERP-7"))
    assert after.status_code == 409 and f"batch {draft_id}" in after.json()["message"]
    # Another owner's MsgId is its own: a customer may use the same one.
    own = customer_account
    theirs = upload(
        api,
        customer.access,
        one_payment({"sortCode": own.sort_code, "accountNumber": own.account_number}, "ERP-7"),
        url=f"/v1/customers/{customer.customer.id}/batch-payments/files",
    )
    assert theirs.status_code == 200, theirs.json()
    assert Draft.objects.count() == 2


def test_payments_sent_with_a_file_draft_are_a_400(api, custodian_auth, custodian_user, custodian_accounts):
    draft_id = upload(api, custodian_auth, one_payment(custodian_accounts[0])).json()["requestId"]
    other = [payment(custodian_accounts[0], "999.00")]

    initiated = api.post(
        URL, {"action": "initiate", "batchId": draft_id, "payments": other}, format="json", **custodian_auth
    )

    assert initiated.status_code == 400 and [e["field"] for e in initiated.json()["errors"]] == ["payments"]
    sca = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **custodian_auth).json()[
        "data"
    ]["scaChallenge"]
    body = {
        "action": "submit",
        "batchId": draft_id,
        "payments": other,
        "scaChallenge": sca,
        "confirmation": totp(custodian_user),
    }
    submitted = api.post(URL, body, format="json", **custodian_auth)
    assert submitted.status_code == 400 and [e["field"] for e in submitted.json()["errors"]] == ["payments"]
    assert not Batch.objects.exists()


def test_initiate_and_submit_without_payments_or_a_file_draft_are_400s(
    api, custodian_auth, custodian_accounts
):
    json_draft = api.post(
        URL,
        {"action": "verify", "payments": [payment(custodian_accounts[0])]},
        format="json",
        **custodian_auth,
    ).json()["requestId"]

    bare = api.post(URL, {"action": "initiate"}, format="json", **custodian_auth)
    json_draft_only = api.post(
        URL, {"action": "initiate", "batchId": json_draft}, format="json", **custodian_auth
    )

    assert bare.status_code == 400 and [e["field"] for e in bare.json()["errors"]] == ["payments"]
    assert json_draft_only.status_code == 400 and [e["field"] for e in json_draft_only.json()["errors"]] == [
        "payments"
    ]


def test_an_outsider_gets_404s(api, customer, custodian_auth, custodian_accounts, customer2_auth):
    foreign = f"/v1/customers/{customer.customer.id}/batch-payments"
    draft_id = upload(api, custodian_auth, one_payment(custodian_accounts[0])).json()["requestId"]

    upload_elsewhere = upload(api, customer2_auth, one_payment(custodian_accounts[0]), url=f"{foreign}/files")
    other_report = api.get(f"{URL}/{draft_id}/status-report", **customer2_auth)
    under_foreign = api.get(f"{foreign}/{draft_id}/status-report", **customer2_auth)

    for response in (upload_elsewhere, other_report, under_foreign):
        assert response.status_code == 404 and response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert Draft.objects.count() == 1


def test_a_custodians_file_on_one_customers_route_pays_only_from_that_customer(
    api, custodian_auth, custodian_accounts
):
    first, second = custodian_accounts
    body = pain001(
        [
            Instruction(scan(first["sortCode"], first["accountNumber"]), [Tx("MINE", "1.00", PAYEE)]),
            Instruction(scan(second["sortCode"], second["accountNumber"]), [Tx("OTHER", "1.00", PAYEE)]),
        ]
    )
    url = f"/v1/customers/{first['customerId']}/batch-payments"

    draft_id = upload(api, custodian_auth, body, url=f"{url}/files").json()["requestId"]

    draft = api.get(f"{url}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert [e["payment"]["endToEndId"] for e in draft["validPayments"]] == ["MINE"]
    assert draft["invalidPayments"][0]["reasons"] == [
        "payer.account: not an account the caller may pay from."
    ]


def test_wrong_tokens_are_refused(api, custodian_accounts, management_auth):
    body = one_payment(custodian_accounts[0])
    id_token = {"HTTP_AUTHORIZATION": management_auth["HTTP_AUTHORIZATION"]}

    assert upload(api, {}, body).status_code == 401
    assert upload(api, {"HTTP_AUTHORIZATION": "Bearer nonsense"}, body).status_code == 401
    assert upload(api, id_token, body).status_code in (401, 403)
    assert not Draft.objects.exists()
