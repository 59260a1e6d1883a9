"""The README's batch file section works after its walk-through, as written."""

import json
import re
import shutil

import pytest
from lxml import etree

from batches.iso20022.schemas import xml_schema
from batches.models import Batch
from payments.models import PaymentRequest
from payments.statement_formats import CAMT053_XSD
from tests.batches.iso20022 import statuses
from tests.kernel.test_readme import README, for_server, run_blocks, walkthrough_script


def files_script() -> str:
    section = README.read_text().split("## Batch files: ISO 20022 pain.001 in", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def _report(path, version: str) -> dict:
    document = etree.parse(str(path)).getroot()
    schema = xml_schema(version)
    assert schema.validate(document), schema.error_log
    return statuses(document)


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_takes_a_file_from_upload_to_its_status_report(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + files_script(), live_server.url)

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    drafted = _report(next(tmp_path.glob("scratch/*/draft-status.xml")), "pain.002.001.03")
    assert drafted["group"] == "PART"
    assert [e[:3] for e in drafted["instructions"][0][1]] == [
        ("INV-7", "ACTC", None),
        ("INV-8", "RJCT", "AM03"),
    ]
    paid = _report(next(tmp_path.glob("scratch/*/batch-status.xml")), "pain.002.001.12")
    assert paid["group"] == "PART" and paid["messageId"].startswith("ERP-")
    assert [e[:3] for e in paid["instructions"][0][1]] == [("INV-7", "ACSC", None), ("INV-8", "RJCT", "AM03")]
    batch = Batch.objects.get(message_id=paid["messageId"])
    assert batch.status == "PARTIALLY_FAILED"
    assert PaymentRequest.objects.filter(batch_item__batch=batch).count() == 1
    # The statement matches the file by EndToEndId, before and after the return.
    request = PaymentRequest.objects.get(batch_item__batch=batch)
    assert request.status == "RETURNED"
    for name, expected in (("camt053.xml", ["DBIT"]), ("camt053-returned.xml", ["DBIT", "CRDT"])):
        document = etree.parse(str(next(tmp_path.glob(f"scratch/*/{name}")))).getroot()
        assert etree.XMLSchema(etree.parse(str(CAMT053_XSD))).validate(document)
        ns = {"c": etree.QName(document).namespace}
        matched = [
            entry
            for entry in document.iterfind(".//c:Ntry", ns)
            if entry.findtext("c:NtryDtls/c:TxDtls/c:Refs/c:EndToEndId", namespaces=ns) == "INV-7"
        ]
        assert [entry.findtext("c:CdtDbtInd", namespaces=ns) for entry in matched] == expected
        for entry in matched:
            refs = entry.find("c:NtryDtls/c:TxDtls/c:Refs", ns)
            assert refs.findtext("c:MsgId", namespaces=ns) == paid["messageId"]
            assert refs.findtext("c:TxId", namespaces=ns) == request.id.hex
    assert matched[1].findtext("c:NtryDtls/c:TxDtls/c:RtrInf/c:Rsn/c:Cd", namespaces=ns) == "AC04"
