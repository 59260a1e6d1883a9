"""The README's curl walk-through works against a running server, as written."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def walkthrough_script() -> str:
    section = README.read_text().split("## Walk-through", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_readme_walkthrough_runs_end_to_end(transactional_db, live_server, sandbox, tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = walkthrough_script().replace("http://127.0.0.1:8000", live_server.url)
    script = script.replace(".venv/bin/python", sys.executable)

    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    documents = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", out, re.S | re.M)]
    capabilities, requests_list, transactions = documents
    assert sandbox["customer"]["accountId"] in {a["accountId"] for a in capabilities["data"]["accounts"]}

    request_id = re.search(r"^payment request (\S+)$", out, re.M).group(1)
    # The replay: the header, then the first payment's body with the same requestId.
    assert re.search(rf"^Idempotent-Replayed: true.*?{request_id}", out, re.M | re.I | re.S)
    pending = [r for r in requests_list["data"]["paymentRequests"] if r["requestId"] == request_id]
    assert [r["status"] for r in pending] == ["PENDING"]
    booked = [t for t in transactions["data"]["transactions"] if t.get("requestId") == request_id]
    assert [(t["direction"], t["amount"]) for t in booked][0] == ("DEBIT", "25.00")


def helpers() -> str:
    """The walk-through's shell helpers (everything before its first variable)."""
    return walkthrough_script().split("\nAPI=", 1)[0]


@pytest.mark.parametrize(
    "answer",
    [
        '{"success": false, "code": "INVALID_CREDENTIALS", "message": "Invalid or already used code"}',
        "<html><body>Bad Gateway</body></html>",
    ],
)
def test_a_failed_step_prints_the_api_answer_not_a_python_error(answer):
    script = helpers() + '\nACCESS=$(field \'["data"]["access_token"]\')\necho reached'

    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], input=answer, capture_output=True, text=True, timeout=60
    )

    assert result.returncode != 0 and "reached" not in result.stdout
    assert result.stderr == f"This step failed. The API answered: {answer}\n"


def test_a_step_that_worked_gives_the_field():
    script = helpers() + '\nfield \'["data"]["access_token"]\''

    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        input='{"success": true, "data": {"access_token": "eyJ.x.y"}}',
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert (result.returncode, result.stdout) == (0, "eyJ.x.y\n")


def test_the_walkthrough_says_a_totp_code_is_accepted_once():
    section = README.read_text().split("## Walk-through", 1)[1].split("\n## ", 1)[0]
    assert "A code is accepted once" in section
