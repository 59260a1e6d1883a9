"""Reading a pain.001 costs bounded memory whatever the file holds.

`SplmtryData/Envlp` may hold any content, which the service does not map: the
reader used to keep a full path string per distinct element of it, and a
367 KiB file (245 levels of 50-character names around 40,000 siblings) took a
worker from 125 to 610 MB. Measured in a fresh process (its peak resident size, so
the C allocations of libxml2 count too), against the 64 MiB a read may cost.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from batches.iso20022.reading import MAX_NAMES
from bench.pain001 import (
    V09,
    Instruction,
    Tx,
    deep_and_wide,
    distinct_names,
    pain001,
    scan,
    with_supplementary_data,
)
from tests.batches.iso20022 import upload

ROOT = Path(__file__).resolve().parents[2]
PAYEE = scan("200000", "55779911")
BUDGET_MIB = 64
# The peak resident size of the process itself (VmHWM): ru_maxrss would carry the
# peak of the process that started it over the exec.
MEASURE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("BANKAPI_ENV", "development")
import django
django.setup()
from batches.iso20022.reading import pain001_read
from batches.iso20022.schemas import xml_schema
def peak_kib():
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split()[0])
body = open(sys.argv[1], "rb").read()
xml_schema("pain.001.001.09")
from bankapi.errors import ApiError
before = peak_kib()
try:
    payments, status = len(pain001_read(body).payments), 200
except ApiError as refused:
    payments, status = 0, refused.status
after = peak_kib()
print(json.dumps({"payments": payments, "status": status, "grew_mib": (after - before) / 1024}))
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


def test_a_file_of_more_distinct_names_than_the_parser_may_keep_is_a_400(
    api, custodian_auth, custodian_accounts
):
    """libxml2 keeps every distinct name while it parses: 16 MiB of distinct names
    took 104 MiB. A file of more than MAX_NAMES (100,000) is refused before it is parsed."""
    payer = custodian_accounts[0]
    base = pain001(
        [Instruction(scan(payer["sortCode"], payer["accountNumber"]), [Tx("E2E-1", "1.00", PAYEE)])],
        version=V09,
    )
    many = with_supplementary_data(base, distinct_names(MAX_NAMES + 1))
    enough = with_supplementary_data(base, distinct_names(MAX_NAMES - 100))

    refused = upload(api, custodian_auth, many)

    assert refused.status_code == 400, refused.content
    assert refused.json()["errors"] == [
        {"field": "Document", "message": f"At most {MAX_NAMES} distinct element and attribute names."}
    ]
    assert upload(api, custodian_auth, enough).status_code == 200
