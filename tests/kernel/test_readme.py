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
    outputs = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", result.stdout, re.S | re.M)]
    assert outputs, result.stdout
    capabilities = outputs[0]
    assert capabilities["success"] is True
    assert sandbox["customer"]["accountId"] in {a["accountId"] for a in capabilities["data"]["accounts"]}
