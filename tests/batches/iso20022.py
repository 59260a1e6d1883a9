"""Helpers of the ISO 20022 file tests: upload a pain.001, read a pain.002."""

from lxml import etree

from batches.iso20022.schemas import namespace_of, xml_schema
from tests.batches.conftest import URL

FILES_URL = f"{URL}/files"


def upload(api, auth, body: bytes, url: str = FILES_URL, content_type: str = "application/xml"):
    return api.generic("POST", url, body, content_type, **auth)


def report(api, auth, batch_id: str, version: str | None = None, url: str = URL) -> etree._Element:
    """The status report, checked against its XSD, as an element tree."""
    query = f"?version={version}" if version else ""
    response = api.get(f"{url}/{batch_id}/status-report{query}", **auth)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/xml"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    document = etree.fromstring(response.content)
    name = version or "pain.002.001.03"
    assert etree.QName(document).namespace == namespace_of(name)
    schema = xml_schema(name)
    assert schema.validate(document), schema.error_log
    return document


def _text(element, path: str, ns: dict) -> str | None:
    found = element.find(path, ns)
    return None if found is None else found.text


def statuses(document: etree._Element) -> dict:
    """`{group, messageId, messageName, instructions: [[(endToEndId, status, code, info)]]}`."""
    ns = {"p": etree.QName(document).namespace}
    group = document.find("p:CstmrPmtStsRpt/p:OrgnlGrpInfAndSts", ns)
    instructions = []
    for instruction in document.findall("p:CstmrPmtStsRpt/p:OrgnlPmtInfAndSts", ns):
        instructions.append(
            (
                _text(instruction, "p:OrgnlPmtInfId", ns),
                [
                    (
                        _text(tx, "p:OrgnlEndToEndId", ns),
                        _text(tx, "p:TxSts", ns),
                        _text(tx, "p:StsRsnInf/p:Rsn/p:Cd", ns),
                        _text(tx, "p:StsRsnInf/p:AddtlInf", ns),
                    )
                    for tx in instruction.findall("p:TxInfAndSts", ns)
                ],
            )
        )
    return {
        "group": _text(group, "p:GrpSts", ns),
        "messageId": _text(group, "p:OrgnlMsgId", ns),
        "messageName": _text(group, "p:OrgnlMsgNmId", ns),
        "instructions": instructions,
    }
