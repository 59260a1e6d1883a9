"""The load generators: wrk against the API (bench/payments.lua) and pgbench
against PostgreSQL itself, and what they report."""

import json
import secrets
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from baseline import database_ensure, pgbench_database_url
from payments_seed import Target
from serving import ROOT, fail

LUA = ROOT / "bench" / "payments.lua"


@dataclass
class WrkResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    non2xx: int
    socket_errors: int
    sample: str

    @property
    def ok_per_second(self) -> float:
        return (self.requests - self.non2xx) / self.seconds

    def describe(self) -> str:
        return (
            f"payments/s={self.ok_per_second:.1f} p50={self.p50_ms:.1f}ms p99={self.p99_ms:.1f}ms "
            f"answers={self.requests} non-2xx={self.non2xx} socket-errors={self.socket_errors}"
        )


def run_wrk(base: str, targets: list[Target], work_dir: Path, *, clients: int, seconds: int, delay_ms=0):
    targets_file = work_dir / f"targets-{uuid.uuid4().hex}.txt"
    targets_file.write_text("".join(target.line() + "\n" for target in targets))
    run_tag = secrets.token_hex(4)
    command = [
        "wrk",
        f"--threads={min(2, clients)}",
        f"--connections={clients}",
        f"--duration={seconds}s",
        "--timeout=10s",
        f"--script={LUA}",
        base,
        "--",
        str(targets_file),
        run_tag,
        str(delay_ms),
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = next((row for row in output.splitlines() if row.startswith("BENCH ")), None)
    if line is None:
        fail(f"wrk printed no result:\n{output}")
    data = json.loads(line[len("BENCH ") :])
    sample = next((row[len("SAMPLE ") :] for row in output.splitlines() if row.startswith("SAMPLE ")), "")
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        non2xx=data["non2xx"],
        socket_errors=data["socket_errors"] + data["timeouts"],
        sample=sample,
    )


def run_pgbench(database_url: str, *, clients: int, seconds: int) -> float:
    url = pgbench_database_url(database_url)
    database_ensure(url)
    scale = max(clients, 1)
    check = subprocess.run(
        ["psql", url, "-Atc", "SELECT count(*) FROM pgbench_branches"], capture_output=True, text=True
    )
    if check.returncode != 0 or check.stdout.strip() != str(scale):
        subprocess.run(["pgbench", "-i", "-q", f"--scale={scale}", url], capture_output=True, check=True)
    result = subprocess.run(
        ["pgbench", f"--client={clients}", f"--jobs={min(2, clients)}", f"--time={seconds}", url],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in result.stdout.splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    fail(f"pgbench printed no tps:\n{result.stdout}")
