"""Benchmark: read a 10,000-transaction pain.001 file as the upload route does.

    .venv/bin/python bench/iso20022.py [--transactions 10000] [--version pain.001.001.03]

Each measurement runs in a fresh subprocess, so its peak resident memory
(ru_maxrss) is its own; tracemalloc's peak counts Python allocations only (lxml
and libxml2 allocate in C). Three measurements on the same generated file:

1. `pain001_read`: the whole read of the upload route (streaming scan, parse,
   XSD validation with lxml, control figures, mapping to batch items);
2. lxml's XSD validation alone (`lxml.etree.XMLSchema`, the one the service uses);
3. xmlschema's XSD validation alone (the pure-Python alternative), for comparison.

Targets on the 2-core development machine: under 5 s and 200 MiB for (1).
No database is touched.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _file(transactions: int, version: str) -> bytes:
    from bench.pain001 import large_file, scan

    return large_file([scan("400000", f"{n:08d}") for n in range(10)], transactions, version=version)


def _measure(kind: str, transactions: int, version: str, traced: bool) -> dict:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("BANKAPI_ENV", "development")
    import django

    django.setup()
    from lxml import etree

    from batches.iso20022.reading import pain001_read
    from batches.iso20022.schemas import hardened_parser, xml_schema

    body = _file(transactions, version)
    xsd = ROOT / "batches" / "iso20022" / "xsd" / f"{version}.xsd"
    if kind == "xmlschema":
        import xmlschema

        schema = xmlschema.XMLSchema(str(xsd))
    else:
        xml_schema(version)  # loaded once per process by the service
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    if kind == "read":
        payments = len(pain001_read(body).payments)
    elif kind == "lxml":
        root = etree.fromstring(body, hardened_parser())
        assert xml_schema(version).validate(root)
        payments = transactions
    else:
        root = etree.fromstring(body, hardened_parser())
        errors = list(schema.iter_errors(root))
        assert not errors, errors[:3]
        payments = transactions
    seconds = time.perf_counter() - started
    _, python_peak = tracemalloc.get_traced_memory() if traced else (0, 0)
    return {
        "kind": kind,
        "bytes": len(body),
        "payments": payments,
        "seconds": round(seconds, 3),
        "tracemalloc_peak_mib": round(python_peak / 2**20, 1),
        "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "maxrss_before_mib": round(baseline / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transactions", type=int, default=10_000)
    parser.add_argument(
        "--version", default="pain.001.001.03", choices=["pain.001.001.03", "pain.001.001.09"]
    )
    parser.add_argument("--measure", choices=["read", "lxml", "xmlschema"], help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(args.measure, args.transactions, args.version, args.traced)))
        return
    print(f"{args.transactions} transactions, {args.version}")
    for kind in ("read", "lxml", "xmlschema"):
        # Timed without tracemalloc (it slows Python code down many times over), then
        # run again under it for the Python allocations' peak.
        timed, traced = (_run(kind, args, traced) for traced in (False, True))
        print(
            f"{kind:10} {timed['seconds']:7.3f} s  peak RSS {timed['maxrss_mib']:6.1f} MiB "
            f"(process before: {timed['maxrss_before_mib']:.1f})  tracemalloc peak "
            f"{traced['tracemalloc_peak_mib']:6.1f} MiB  file {timed['bytes'] / 2**20:.1f} MiB"
        )


def _run(kind: str, args: argparse.Namespace, traced: bool) -> dict:
    command = [sys.executable, __file__, "--measure", kind, "--transactions", str(args.transactions)]
    command += ["--version", args.version] + (["--traced"] if traced else [])
    output = subprocess.run(command, capture_output=True, text=True, check=True)
    figures: dict = json.loads(output.stdout.strip().splitlines()[-1])
    return figures


if __name__ == "__main__":
    main()
