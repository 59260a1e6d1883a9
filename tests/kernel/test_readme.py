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

    # A plain bash, as a reader's terminal runs it: the walk-through's own `set -e` stops it.
    result = subprocess.run(["bash", "-c", script], input=answer, capture_output=True, text=True, timeout=60)

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


def test_management_users_sign_in_without_a_program_as_the_readme_says(api, sandbox):
    readme = README.read_text()
    assert "Management users (the sandbox's `operator`) belong to no program" in readme
    operator = sandbox["operator"]
    body = {"email": operator["email"], "password": operator["password"]}

    with_program = api.post(
        "/v1/auth/login", body, format="json", HTTP_X_PROGRAM_ID=sandbox["consumerProgramId"]
    )
    without = api.post("/v1/auth/login", body, format="json")

    assert (with_program.status_code, with_program.json()["code"]) == (401, "INVALID_CREDENTIALS")
    assert without.status_code == 200 and without.json()["data"]["session_token"]


def test_make_run_says_what_to_open_before_it_serves():
    result = subprocess.run(
        ["make", "-n", "run", "VENV=/nonexistent-venv"],
        cwd=README.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )

    out = result.stdout
    assert result.returncode == 0, result.stderr
    said = out.index("/v1/docs")
    assert said < out.index("runserver")
    assert (
        "/admin/" in out[said - 400 : out.index("runserver")] and "operator" in out and "Walk-through" in out
    )


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_the_sandbox_clock_example_pays_the_schedule_it_makes(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    section = README.read_text().split("### Sandbox clock", 1)[1].split("\n## ", 1)[0]
    clock = "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))
    script = (walkthrough_script() + "\n" + clock).replace("http://127.0.0.1:8000", live_server.url)
    script = script.replace(".venv/bin/python", sys.executable)

    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0, result.stdout + result.stderr
    ran = json.loads(result.stdout.strip().splitlines()[-1])
    assert ran == {"success": True, "data": {"date": "2027-03-31", "paid": 3, "held": 0, "failed": 0}}
