"""`bench/payments --baseline <commit>`: the same bench on an older commit and on
this checkout, back to back in one session on the same database server, and the
ratio of each figure.

The baseline is checked out into a temporary git worktree (detached, removed
afterwards). It runs its own `bench/payments_bench.py`, since seeding and the
in-process step use the code of their commit. It uses this checkout's `.venv`
when its locked requirements are the same (a symlink), else a virtualenv made for
the run from its own `requirements-dev.txt`. Both runs print the same lines;
the figures are read from them.
"""

import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

# The bench drives thousands of payments a second from one address and, in the
# hot mode, one token: the per-token and per-address request budgets (a guard
# against floods, measured by bench/sign_in_flood.py) would answer most of them
# 429 and the figures would count refusals, not payments.
UNLIMITED_BUDGETS = {"REQUEST_BUDGET_PER_TOKEN": "1000000000", "REQUEST_BUDGET_PER_ADDRESS": "1000000000"}

ROOT = Path(__file__).resolve().parent.parent
LOCK = "requirements-dev.txt"


class BaselineError(Exception):
    """The baseline cannot be run (unknown commit, no bench at that commit, ...)."""


def git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise BaselineError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def commit_resolve(commit: str) -> str:
    """The full id of `commit`, or BaselineError if it names no commit here."""
    if not commit or commit.startswith("-"):
        raise BaselineError(f"not a commit: {commit!r}")
    return git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")


def pins(lock: Path) -> dict[str, str]:
    """{distribution: version} of a compiled requirements file."""
    found = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", lock.read_text(), re.M)
    return {name.lower().replace("_", "-"): version for name, version in found}


def same_requirements(checkout: Path) -> bool:
    """Whether this checkout's .venv holds every version the checkout's lock pins
    (the same lock, or ours adds packages to it)."""
    ours = ROOT / LOCK
    theirs = checkout / LOCK
    if not (ours.exists() and theirs.exists()):
        return False
    mine = pins(ours)
    return all(mine.get(name) == version for name, version in pins(theirs).items())


def venv_provide(checkout: Path) -> str:
    """A `.venv` in the checkout: a link to this one when the locks match, else a new one."""
    target = checkout / ".venv"
    if same_requirements(checkout):
        target.symlink_to(ROOT / ".venv", target_is_directory=True)
        return "this checkout's .venv (same requirements-dev.txt, or one that adds to it)"
    python = shutil.which("python3.11") or shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", str(target)], check=True)
    subprocess.run(
        [str(target / "bin" / "pip"), "install", "--quiet", "--require-hashes", "-r", str(checkout / LOCK)],
        check=True,
    )
    return f"a new virtualenv from its own {LOCK}"


@contextlib.contextmanager
def baseline_checkout(commit: str, *, with_venv: bool = True) -> Iterator[tuple[Path, str]]:
    """The commit checked out in a temporary worktree (and its venv), removed on exit
    whatever happens inside."""
    full = commit_resolve(commit)
    parent = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    checkout = parent / full[:12]
    git("worktree", "add", "--detach", "--quiet", str(checkout), full)
    try:
        if not (checkout / "bench" / "payments_bench.py").exists():
            raise BaselineError(f"commit {full[:12]} has no bench/payments_bench.py to run")
        venv = venv_provide(checkout) if with_venv else "none"
        yield checkout, venv
    finally:
        link = checkout / ".venv"
        if link.is_symlink():
            link.unlink()  # never follow the link into this checkout's venv
        with contextlib.suppress(BaselineError):
            git("worktree", "remove", "--force", str(checkout))
        shutil.rmtree(parent, ignore_errors=True)
        with contextlib.suppress(BaselineError):
            git("worktree", "prune")


# A line of the server's access log (gunicorn's format), left out of the echo.
ACCESS_LINE = re.compile(r'^\S+ - - \[[^]]+\] "')
# The lines both runs print (bench/payments_bench.py), read back into figures.
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
PATTERNS = {
    "spread_per_s": rf"^spread \(.*payments/s={NUMBER}",
    "ceiling_per_s": rf"^ceiling \(.*payments/s={NUMBER}",
    "route_over_ceiling": rf"^route / ceiling: {NUMBER}",
    "route_over_interleaved": rf"^route / baseline \(interleaved\): {NUMBER}",
    "hot_per_s": rf"^hot \(.*payments/s={NUMBER}",
    "half_rate_p99_ms": rf"^half rate .*p99={NUMBER}ms",
    "full_day_per_s": rf"^full day .*payments/s={NUMBER}",
    "full_day_share_pct": rf"^full day .*= {NUMBER}% of the hot run",
    "pgbench_tps": rf"^pgbench .*tps={NUMBER}",
    "statements": rf"^statements per payment: {NUMBER}",
    "in_process_ms": rf"^one payment in-process, one thread: {NUMBER} ms",
    "spread_ratio": rf"^ratio={NUMBER}",
    "hot_ratio": rf"^ratio=.* hot={NUMBER}",
    "load": rf"^machine: .*load average {NUMBER}",
}
# (label, key, better when higher?)
ROWS = [
    ("spread payments/s", "spread_per_s", True),
    ("bare ceiling payments/s", "ceiling_per_s", True),
    ("route / ceiling", "route_over_ceiling", True),
    ("route / interleaved commit", "route_over_interleaved", True),
    ("hot payments/s", "hot_per_s", True),
    ("p99 at half rate (ms)", "half_rate_p99_ms", False),
    ("statements per payment", "statements", False),
    ("full day payments/s", "full_day_per_s", True),
    ("full day, % of the hot run", "full_day_share_pct", True),
    ("one payment in-process (ms)", "in_process_ms", False),
    ("pgbench TPS", "pgbench_tps", True),
    ("ratio spread / pgbench", "spread_ratio", True),
    ("ratio hot / pgbench", "hot_ratio", True),
    ("load average at start", "load", False),
]


def figures_parse(output: str) -> dict[str, float]:
    """The figures a bench run printed (a figure it did not print is absent)."""
    found: dict[str, float] = {}
    for key, pattern in PATTERNS.items():
        match = re.search(pattern, output, re.M)
        if match:
            found[key] = float(match.group(1))
    return found


def comparison(baseline: dict[str, float], current: dict[str, float]) -> list[str]:
    """One line per figure: baseline, current, current ÷ baseline."""
    lines = [f"{'figure':<30} {'baseline':>10} {'current':>10} {'ratio':>7}"]
    for label, key, _ in ROWS:
        before, after = baseline.get(key), current.get(key)
        shown = [
            f"{value:>10.3f}".rstrip("0").rstrip(".") if value is not None else f"{'-':>10}"
            for value in (before, after)
        ]
        ratio = f"{after / before:>7.2f}" if before and after is not None else f"{'-':>7}"
        lines.append(f"{label:<30} {shown[0]:>10} {shown[1]:>10} {ratio}")
    return lines


def bench_run(label: str, python: str, script: Path, args: list[str], cwd: Path, log: Path) -> str:
    """Run one bench with its output (the server's access log included) in `log`,
    then print its own lines prefixed by `label`; answer them. Writing to a file
    costs the run nothing more than a terminal would; echoing every access line
    from here would spend this process's CPU during the run."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    # A baseline whose bench predates them gets the same unlimited request
    # budgets as ours (its server inherits this environment).
    env = {**UNLIMITED_BUDGETS, **env}
    with log.open("w") as out:
        done = subprocess.run(
            [python, str(script), *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    lines = [line for line in log.read_text().splitlines(keepends=True) if not ACCESS_LINE.match(line)]
    for line in lines:
        print(f"[{label}] {line}", end="", flush=True)
    if done.returncode != 0:
        raise BaselineError(f"the {label} bench failed (exit {done.returncode}); its output: {log}")
    return "".join(lines)


def database_recreate(url: str) -> None:
    """Drop and create the bench database (named by `url`, on its server), so
    each side starts from an empty one: the other side's schema may be newer
    than the migrations of this side (a baseline's seeding copies rows of
    tables whose later columns it does not know)."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not name or name in {"postgres", "template0", "template1"}:
        raise BaselineError(f"not a database the bench may drop: {name!r}")
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def database_ensure(url: str) -> None:
    """Create the database `url` names, on its server, unless it exists (the
    pgbench database beside the bench's, on a new machine)."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def pgbench_database_url(database_url: str) -> str:
    """The database pgbench runs in: BENCH_PGBENCH_DB, else `<the bench database>_pgbench`."""
    parts = urlsplit(database_url)
    name = os.environ.get("BENCH_PGBENCH_DB") or f"{parts.path.lstrip('/')}_pgbench"
    return urlunsplit(parts._replace(path=f"/{name}"))


def bench_database_url() -> str:
    url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL") or ""
    if not url.startswith("postgres"):
        raise BaselineError(
            "set BENCH_DATABASE_URL (or DATABASE_URL) to a PostgreSQL database the bench may wipe"
        )
    return url


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs that printed it."""
    keys = {key for run in runs for key in run}
    return {key: statistics.median([run[key] for run in runs if key in run]) for key in keys}


def baseline_compare(commit: str, shared_args: list[str], current_args: list[str], rounds: int = 1) -> int:
    """The whole `--baseline` run: the baseline's bench, then this checkout's,
    each on a database made anew; with `rounds` above 1, that many pairs, the
    order turned round in every other one (a side that runs second meets the
    load the first left), then each figure's median over the rounds."""
    if rounds < 1:
        raise BaselineError("--rounds takes a whole number from 1")
    commit_resolve(commit)  # an unknown commit is refused before anything is dropped
    database = bench_database_url()
    logs = Path(tempfile.mkdtemp(prefix="bench-baseline-logs-"))
    print(f"full output of both runs in {logs}")
    # A baseline's bench may not make its pgbench database itself. (The bench
    # database is made anew before each side runs.)
    database_ensure(pgbench_database_url(database))
    heading = (
        f"baseline {commit} against the current checkout ({git('rev-parse', '--short', 'HEAD')}, "
        "uncommitted changes included), same database server, back to back"
    )
    bases: list[dict[str, float]] = []
    currents: list[dict[str, float]] = []
    with baseline_checkout(commit) as (checkout, venv):
        print(f"baseline {git('rev-parse', '--short', 'HEAD', cwd=checkout)} in {checkout}, venv: {venv}")
        sides = {
            "baseline": (str(checkout / ".venv" / "bin" / "python"), checkout, shared_args, bases),
            "current": (sys.executable, ROOT, shared_args + current_args, currents),
        }
        for number in range(1, rounds + 1):
            order = ["baseline", "current"] if number % 2 else ["current", "baseline"]
            for side in order:
                python, cwd, args, found = sides[side]
                label = side if rounds == 1 else f"{side} {number}"
                database_recreate(database)
                out = bench_run(
                    label,
                    python,
                    cwd / "bench" / "payments_bench.py",
                    args,
                    cwd,
                    logs / f"{side}-{number}.log",
                )
                found.append(figures_parse(out))
            print()
            print(f"{heading}{f', round {number} of {rounds} ({order[0]} first)' if rounds > 1 else ''}:")
            for line in comparison(bases[-1], currents[-1]):
                print(line)
    if rounds > 1:
        print()
        print(f"{heading}, the median of each figure over {rounds} rounds:")
        for line in comparison(medians(bases), medians(currents)):
            print(line)
    return 0
