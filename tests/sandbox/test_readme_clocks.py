"""The README's test-clock section runs as written, after the walk-through's helpers."""

import csv
import io
import json
import re
import shutil
from decimal import Decimal

import pytest

from bankapi.models import Customer, TestClock
from payments.models import ScheduleRun
from tests.kernel.test_readme import README, for_server, helpers, run_blocks, walkthrough_script

HEADING = "## Test clocks: a customer's year in one call"


def clocks_script() -> str:
    section = README.read_text().split(HEADING, 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_readme_advances_a_clock_customer_three_months(transactional_db, live_server, sandbox, tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    walkthrough = walkthrough_script()
    sign_in = re.search(r"^sign_in\(\) \{\n.*?^\}\n", walkthrough, re.S | re.M).group(0)
    program = "PROGRAM=$(sandbox '[\"consumerProgramId\"]')\n"
    script = for_server(
        helpers() + "\nAPI=http://127.0.0.1:${PORT:-8000}\n" + program + sign_in + clocks_script(),
        live_server.url,
    )

    result = run_blocks(script, tmp_path, timeout=300)

    assert result.returncode == 0, result.stdout + result.stderr
    clock = TestClock.objects.get(name="Walk-through")
    customer = Customer.objects.get(test_clock=clock)
    runs = ScheduleRun.objects.filter(schedule__customer=customer).order_by("run_date")
    assert [run.run_date.day for run in runs] == [1, 1, 1, 1] and all(run.outcome == "PAID" for run in runs)
    rows = list(csv.DictReader(io.StringIO(result.stdout[result.stdout.index("bookedAt,") :])))
    rents = [row for row in rows if row.get("reference") == "Rent"]
    assert len(rents) == 4 and {Decimal(row["amount"]) for row in rents} == {Decimal("250.00")}
    assert re.search(r"^sandbox-clock: \S+T12:00:00Z", result.stdout, re.M | re.I)
