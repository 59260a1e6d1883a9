"""Benchmark: the peak memory of reading the worst pain.001 at the route's limit.

    .venv/bin/python bench/iso20022_memory.py [--size-mib 16]

A read of any file the upload route accepts (16 MiB at most) may cost at most
64 MiB above the process's resting size. Each file below is read as the route
does (`batches.iso20022.reading.pain001_read`) in a fresh subprocess, so its
peak resident size (VmHWM, which counts libxml2's C allocations) is its own:

- `deep and wide`: `SplmtryData/Envlp` holding 245 levels of 50-character names
  around as many distinct siblings as the size allows (every element a distinct
  path: what the old reader kept a path string for);
- `flat`: `SplmtryData/Envlp` holding as many empty elements as the size allows
  (the most elements a number of bytes can hold);
- `distinct names`: the same, each element of its own four-letter name (libxml2
  keeps every distinct name in its dictionary while it parses);
- `invalid flat`: the same with an element the XSD refuses at the end (the
  refusal's errors are gathered as the file streams past);
- `10,000 transactions`: the largest file of plain transactions;
- the three files an attacker sent, each failing the schema, at their own sizes
  (`bench.pain001.finding_files`): `240k attributed` (240,000 small elements of 3
  attributes under 245 levels of nesting, 5.0 MiB), `60k attributes` (40
  elements of 60,000 attributes each, 15.9 MiB), `200k namespaces` (200,000
  elements each declaring a namespace of its own, 12.0 MiB).

Prints each figure with its growth as a ratio to 64 MiB, then
`ratio=<worst growth ÷ 64 MiB>` as its last line (below 1 is within the
budget). No database is touched.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUDGET_MIB = 64
FINDING = ("240k attributed", "60k attributes", "200k namespaces")
KINDS = ("deep and wide", "flat", "distinct names", "invalid flat", "10,000 transactions", *FINDING)


def _file(kind: str, size: int) -> bytes:
    from bench.pain001 import finding_files, hostile_files, large_file, scan

    if kind in FINDING:
        return finding_files(scan("400000", "12345678"))[kind]
    if kind == "10,000 transactions":
        return large_file([scan("400000", f"{n:08d}") for n in range(10)], 10_000)
    if kind == "invalid flat":
        return hostile_files(scan("400000", "12345678"), size)["flat"].replace(
            b"</CstmrCdtTrfInitn>", b"<Refused/></CstmrCdtTrfInitn>"
        )
    return hostile_files(scan("400000", "12345678"), size)[kind]


def _peak_kib() -> int:
    """The process's own peak resident size (VmHWM). Not ru_maxrss: Linux carries
    over an exec the peak of the process that started this one."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


def _measure(kind: str, path: str) -> dict:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("BANKAPI_ENV", "development")
    import django

    django.setup()
    from bankapi.errors import ApiError
    from batches.iso20022.reading import pain001_read
    from batches.iso20022.schemas import xml_schema

    body = Path(path).read_bytes()
    for version in ("pain.001.001.03", "pain.001.001.09"):
        xml_schema(version)  # loaded once per process by the service
    before = _peak_kib()
    started = time.perf_counter()
    try:
        outcome = f"{len(pain001_read(body).payments)} payments"
    except ApiError as refused:
        outcome = f"{refused.status} {refused.code}"
    seconds = time.perf_counter() - started
    after = _peak_kib()
    return {
        "kind": kind,
        "mib": round(len(body) / 2**20, 1),
        "outcome": outcome,
        "seconds": round(seconds, 2),
        "grew_mib": round((after - before) / 1024, 1),
        "before_mib": round(before / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mib", type=float, default=16.0)
    parser.add_argument("--measure", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=KINDS, action="append", help="measure only these files")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(args.measure, args.file)))
        return
    size = int(args.size_mib * 2**20) - 4096  # under the route's limit
    worst = 0.0
    for kind in args.only or KINDS:
        # Made here and read there from a file: making it would raise the reader's peak.
        with tempfile.NamedTemporaryFile(suffix=".xml") as file:
            file.write(_file(kind, size))
            file.flush()
            command = [sys.executable, __file__, "--measure", kind, "--file", file.name]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
        worst = max(worst, figures["grew_mib"])
        print(
            f"{kind:20} {figures['mib']:5.1f} MiB file  {figures['outcome']:24} {figures['seconds']:6.2f} s  "
            f"grew {figures['grew_mib']:6.1f} MiB (resting {figures['before_mib']:.1f})  "
            f"ratio {figures['grew_mib'] / BUDGET_MIB:.3f}"
        )
    print(f"ratio={worst / BUDGET_MIB:.3f}")


if __name__ == "__main__":
    main()
