"""The README's batch section works after its walk-through, as written."""

import json
import re
import shutil

import pytest

from batches.models import Batch
from payments.models import PaymentRequest
from tests.kernel.test_readme import README, for_server, run_blocks, walkthrough_script


def batches_script() -> str:
    section = (
        README.read_text()
        .split("## Batch payments: from verify to completed items", 1)[1]
        .split("\n## ", 1)[0]
    )
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_takes_a_batch_from_verify_to_completed_items(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + batches_script(), live_server.url)

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    documents = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", result.stdout, re.S | re.M)]
    draft, batch, listed = documents[-3:]
    assert draft["data"]["draft"]["payloadStatus"] == "COMPLETE"
    assert [e["index"] for e in draft["data"]["draft"]["invalidPayments"]] == [2]
    batch_id = re.search(r"^batch (\S+)$", result.stdout, re.M).group(1)
    assert batch_id == draft["data"]["batchId"]
    assert batch["data"]["status"] == "PARTIALLY_FAILED"
    assert [i["status"] for i in batch["data"]["paymentsBatchItems"]] == ["SUCCESS", "SUCCESS", "FAILED"]
    assert listed["data"]["paymentsBatches"][0]["totalAmount"] == "20.75"
    assert PaymentRequest.objects.filter(batch_item__batch_id=batch_id).count() == 2
    assert Batch.objects.get(id=batch_id).custodian is not None
