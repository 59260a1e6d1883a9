"""Reading a pain.001 costs bounded memory whatever the file holds.

`SplmtryData/Envlp` may hold any content, which the service does not map: the
reader used to keep a full path string per distinct element of it, and a
367 KiB file (245 levels of 50-character names around 40,000 siblings) took a
worker from 125 to 610 MB. Measured in a fresh process (peak resident size, so
the C allocations of libxml2 count too), against the 64 MiB a read may cost.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.pain001 import V09, Instruction, Tx, deep_and_wide, pain001, scan, with_supplementary_data

ROOT = Path(__file__).resolve().parents[2]
BUDGET_MIB = 64
MEASURE = """
import json, os, resource, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bankapi.settings")
os.environ.setdefault("BANKAPI_ENV", "development")
import django
django.setup()
from batches.iso20022.reading import pain001_read
from batches.iso20022.schemas import xml_schema
body = open(sys.argv[1], "rb").read()
xml_schema("pain.001.001.09")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
payments = len(pain001_read(body).payments)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"payments": payments, "grew_mib": (after - before) / 1024}))
"""


def read_in_a_fresh_process(body: bytes, tmp_path: Path) -> dict:
    path = tmp_path / "pain001.xml"
    path.write_bytes(body)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@pytest.mark.parametrize(("depth", "siblings"), [(245, 40_000)])
def test_the_issues_file_is_read_within_the_budget(tmp_path, depth, siblings):
    base = pain001(
        [Instruction(scan("400000", "12345678"), [Tx("E2E-1", "1.00", scan("200000", "55779911"))])],
        version=V09,
    )
    body = with_supplementary_data(base, deep_and_wide(depth, siblings))
    assert 350 * 1024 < len(body) < 400 * 1024

    figures = read_in_a_fresh_process(body, tmp_path)

    assert figures["payments"] == 1
    assert figures["grew_mib"] < BUDGET_MIB / 4, figures
