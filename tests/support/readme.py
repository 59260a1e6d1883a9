"""Running a README section after its walk-through, as written: the section's
bash blocks appended to the walk-through's, run against a live server with the
sandbox a bootstrap wrote, and the JSON answers they printed."""

import json
import re
from pathlib import Path
from typing import Any

from tests.kernel.test_readme import README, for_server, run_blocks, walkthrough_script


def section_script(heading: str) -> str:
    """The bash blocks of the README section under `heading`, in order."""
    section = README.read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def readme_section_answers(heading: str, server_url: str, sandbox: dict, tmp_path: Path) -> list[Any]:
    """Run the walk-through and then the section under `heading` in `tmp_path`
    (its `var/sandbox.json` the bootstrap's `sandbox`), require it to exit 0,
    and answer the `data` of every pretty-printed JSON answer it printed, in order."""
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + section_script(heading), server_url)
    result = run_blocks(script, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(block)["data"] for block in re.findall(r"^\{\n.*?^\}$", result.stdout, re.S | re.M)]
