"""The README's approvals section runs as written, after the walk-through's helpers."""

import json
import re
import shutil
from decimal import Decimal

import pytest

from approvals.models import Approval
from bankapi.models import Account
from payments.models import PaymentRequest
from tests.kernel.test_readme import README, for_server, helpers, run_blocks, walkthrough_script

HEADING = "## Approvals: a large business payment signed for by a second user"


def approvals_script() -> str:
    section = README.read_text().split(HEADING, 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def test_the_section_sits_just_before_the_batch_walk_through():
    text = README.read_text()
    assert text.index(HEADING) < text.index("## Batch payments: from verify to completed items")
    assert "\n## " not in text.split(HEADING, 1)[1].split("## Batch payments", 1)[0]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_approves_a_business_payment_with_a_totp_code(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    # The walk-through's helpers (`sandbox`, `field`, `code`, `sign_in`), then the section.
    sign_in = re.search(r"^sign_in\(\) \{\n.*?^\}\n", walkthrough_script(), re.S | re.M).group(0)
    script = for_server(
        helpers() + "\nAPI=http://127.0.0.1:${PORT:-8000}\n" + sign_in + approvals_script(), live_server.url
    )

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    documents = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", result.stdout, re.S | re.M)]
    policy, read_back = documents
    assert policy["data"]["tiers"] == [{"minAmount": "20000.00", "approvers": 1}]
    approval_id = re.search(r"^approval (\S+)$", result.stdout, re.M).group(1)
    assert re.search(r"^EXECUTED$", result.stdout, re.M)
    data = read_back["data"]
    assert data["approvalId"] == approval_id and data["status"] == "EXECUTED"
    assert [entry["method"] for entry in data["approvals"]] == ["totp"]
    request = PaymentRequest.objects.get(id=data["result"]["requestId"])
    assert request.amount == Decimal("20000.00")
    # At the program's review threshold: the payment the approval made waits for
    # compliance review, as the last step shows and the README says.
    assert request.status == "PENDING_TM"
    assert re.search(rf"^payment {request.id} PENDING_TM$", result.stdout, re.M)
    section = README.read_text().split(HEADING, 1)[1].split("\n## ", 1)[0]
    assert "waits for compliance review, PENDING_TM" in section
    assert Account.objects.get(id=sandbox["business"]["accountId"]).balance == Decimal("80000.00")
    assert Approval.objects.get(id=approval_id).status == "EXECUTED"
