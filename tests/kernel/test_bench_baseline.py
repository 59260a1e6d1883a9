"""`bench/payments --baseline <commit>`: the parts that run without wrk or a bench
database (argument handling, the temporary worktree and its clean-up, reading
the figures back and their ratio)."""

import contextlib
import importlib.util
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import requires_postgres

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def load(name: str):
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # payments_bench imports `baseline` as its sibling
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)  # the one `from baseline import ...` finds
    spec.loader.exec_module(module)
    return module


baseline = load("baseline")
payments_bench = load("payments_bench")

pytestmark = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the project's git checkout")


def worktrees() -> str:
    return subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def test_an_unknown_commit_is_refused_before_anything_is_checked_out(capsys, monkeypatch):
    calls = []
    real_git = baseline.git
    monkeypatch.setattr(
        baseline, "git", lambda *args, **kwargs: calls.append(args) or real_git(*args, **kwargs)
    )

    with pytest.raises(SystemExit) as exited:
        payments_bench.main(["--in-process-only", "--baseline", "0" * 40])

    assert exited.value.code == 2
    assert "bench/payments:" in capsys.readouterr().err
    assert [args[0] for args in calls] == ["rev-parse"]  # no `worktree add`


@pytest.mark.parametrize("commit", ["", "--force", "-b"])
def test_an_option_is_not_taken_for_a_commit(commit):
    with pytest.raises(baseline.BaselineError):
        baseline.commit_resolve(commit)


def test_the_baseline_is_checked_out_detached_with_this_venv_and_removed_afterwards():
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()

    with baseline.baseline_checkout("HEAD") as (checkout, venv):
        assert str(checkout) in worktrees()
        assert (checkout / "bench" / "payments_bench.py").exists()
        assert (checkout / ".venv").is_symlink()
        assert (checkout / ".venv").resolve() == (ROOT / ".venv").resolve()
        assert "same requirements-dev.txt" in venv
        checked_out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True
        ).stdout.strip()
        assert checked_out == head

    assert str(checkout) not in worktrees()
    assert not checkout.exists()
    assert (ROOT / ".venv" / "bin" / "python").exists()  # the link was removed, not its target


def test_the_worktree_is_removed_when_the_run_fails_inside():
    with pytest.raises(RuntimeError), baseline.baseline_checkout("HEAD") as (checkout, _):
        raise RuntimeError("the bench crashed")

    assert str(checkout) not in worktrees()
    assert not checkout.exists()
    assert (ROOT / ".venv" / "bin" / "python").exists()


def test_a_commit_without_the_bench_is_refused_and_cleaned_up(tmp_path, monkeypatch):
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "bench/payments_bench.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.split()
    if not added:
        pytest.skip("the history holding the bench's first commit is not here (shallow clone)")
    parent = tmp_path / "baseline"
    parent.mkdir()
    monkeypatch.setattr(baseline.tempfile, "mkdtemp", lambda prefix: str(parent))

    with pytest.raises(baseline.BaselineError, match="no bench/payments_bench.py"):
        with baseline.baseline_checkout(f"{added[-1]}~1", with_venv=False):
            pass

    assert str(parent) not in worktrees()
    assert not parent.exists()


OUTPUT = """\
bench/payments on 127.0.0.1/bench
machine: 2 x AMD EPYC, PostgreSQL 15.20, load average 1.5
statements per payment: 10 (8 besides transaction control), in-process, CONN_MAX_AGE=600
one payment in-process, one thread: 5.7 ms (median of 200)
spread (100 accounts, 8 clients): {spread}
hot (1 account, 8 clients): {hot}
half rate (aimed at 150/s, 40 ms between requests per client): {half}
full day (1 account with 100000 payments today): {day} = 98% of the hot run
pgbench tpcb-like (8 clients, 15s): tps=4000
ratio=0.075 hot=0.063
"""


def test_the_figures_are_read_back_from_what_the_bench_prints():
    def wrk(requests: int, p99_ms: float) -> str:
        return payments_bench.WrkResult(
            requests=requests, seconds=15.0, p50_ms=9.0, p99_ms=p99_ms, non2xx=0, socket_errors=0, sample=""
        ).describe()

    printed = OUTPUT.format(
        spread=wrk(4500, 55.0), hot=wrk(3750, 60.0), half=wrk(2220, 26.7), day=wrk(3675, 61)
    )

    figures = baseline.figures_parse(printed)

    assert figures == {
        "spread_per_s": 300.0,
        "hot_per_s": 250.0,
        "half_rate_p99_ms": 26.7,
        "full_day_per_s": 245.0,
        "full_day_share_pct": 98.0,
        "pgbench_tps": 4000.0,
        "statements": 10.0,
        "in_process_ms": 5.7,
        "spread_ratio": 0.075,
        "hot_ratio": 0.063,
        "load": 1.5,
    }


def test_the_comparison_gives_current_over_baseline_and_a_dash_for_what_one_run_lacks():
    lines = baseline.comparison(
        {"spread_per_s": 200.0, "statements": 10.0}, {"spread_per_s": 300.0, "statements": 10.0}
    )
    rows = {line[:30].strip(): line[30:].split() for line in lines[1:]}

    assert rows["spread payments/s"] == ["200", "300", "1.50"]
    assert rows["statements per payment"] == ["10", "10", "1.00"]
    assert rows["hot payments/s"] == ["-", "-", "-"]


def test_both_runs_get_the_same_measuring_options_and_only_the_current_one_the_server(monkeypatch):
    parser_args = ["--duration=5", "--clients=4", "--server=granian", "--in-process-only"]
    captured = {}

    def compare(commit, shared, current, rounds):
        captured.update(commit=commit, shared=shared, current=current, rounds=rounds)
        return 0

    monkeypatch.setattr(sys.modules["baseline"], "baseline_compare", compare)
    with pytest.raises(SystemExit) as exited:
        payments_bench.main([*parser_args, "--baseline", "main"])

    assert exited.value.code == 0
    assert captured["commit"] == "main"
    assert "--duration=5" in captured["shared"] and "--clients=4" in captured["shared"]
    assert "--in-process-only" in captured["shared"]
    assert not any(arg.startswith("--server") for arg in captured["shared"])
    # The server, and the ceiling's rounds: the baseline's bench may know neither.
    assert captured["current"] == ["--server=granian", "--pairs=3"]
    assert captured["rounds"] == 1


def test_rounds_turn_the_order_round_and_end_with_each_figure_s_median(monkeypatch, capsys):
    """Three pairs: baseline first, then current first, then baseline first (the
    side that runs second meets the load the first left), each on a database
    made anew, each pair's table, then the medians."""
    module = sys.modules["baseline"]
    ran, recreated = [], []
    spread = {"baseline": iter([100.0, 300.0, 200.0]), "current": iter([150.0, 600.0, 320.0])}

    @contextlib.contextmanager
    def checkout(commit):
        yield ROOT, "a venv"  # git reads its commit; nothing runs there

    def run(label, python, script, args, cwd, log):
        side = label.split()[0]
        ran.append((label, side == "current" and "--server=granian" in args))
        return f"spread (100 accounts, 8 clients): payments/s={next(spread[side])} p50=1ms p99=2ms\n"

    monkeypatch.setattr(module, "bench_database_url", lambda: "postgres://127.0.0.1/bench")
    monkeypatch.setattr(module, "database_recreate", recreated.append)
    monkeypatch.setattr(module, "database_ensure", lambda url: None)
    monkeypatch.setattr(module, "commit_resolve", lambda commit: commit)
    monkeypatch.setattr(module, "baseline_checkout", checkout)
    monkeypatch.setattr(module, "bench_run", run)

    assert module.baseline_compare("main", ["--duration=5"], ["--server=granian"], rounds=3) == 0

    assert ran == [
        ("baseline 1", False),
        ("current 1", True),
        ("current 2", True),
        ("baseline 2", False),
        ("baseline 3", False),
        ("current 3", True),
    ]
    assert len(recreated) == 6  # before every side
    printed = capsys.readouterr().out
    assert "round 2 of 3 (current first)" in printed
    median_table = printed.split("the median of each figure over 3 rounds:")[1]
    row = next(line for line in median_table.splitlines() if line.startswith("spread payments/s"))
    assert row.split()[-3:] == ["200", "320", "1.60"]


def test_no_round_is_refused():
    with pytest.raises(sys.modules["baseline"].BaselineError):
        sys.modules["baseline"].baseline_compare("main", [], [], rounds=0)


def test_a_run_keeps_its_whole_output_in_a_file_and_answers_its_own_lines(tmp_path, capsys):
    script = tmp_path / "fake_bench.py"
    script.write_text(
        "print('statements per payment: 10 (8 besides transaction control)')\n"
        'print(\'127.0.0.1 - - [25/Nov/2026:21:03:47 +0000] "POST /v1/x HTTP/1.1" 200 112 "-" "-"\')\n'
        "print('ratio=0.070 hot=0.067')\n"
    )
    log = tmp_path / "run.log"

    printed = baseline.bench_run("current", sys.executable, script, [], tmp_path, log)

    assert printed.splitlines() == [
        "statements per payment: 10 (8 besides transaction control)",
        "ratio=0.070 hot=0.067",
    ]
    assert "POST /v1/x" in log.read_text()
    assert "[current] ratio=0.070" in capsys.readouterr().out


def test_a_failed_run_is_reported_with_where_its_output_is(tmp_path):
    script = tmp_path / "failing_bench.py"
    script.write_text("raise SystemExit(3)\n")

    with pytest.raises(baseline.BaselineError, match="exit 3"):
        baseline.bench_run("baseline", sys.executable, script, [], tmp_path, tmp_path / "run.log")


@requires_postgres
def test_each_side_starts_from_a_database_made_anew():
    """The bench database is dropped and made again before each side runs: the
    baseline's migrations cannot meet the later columns of the current schema."""
    import psycopg
    from django.conf import settings

    server = settings.DATABASES["default"]
    url = f"postgres://{server['USER']}@{server['HOST'] or '127.0.0.1'}:{server['PORT'] or 5432}"
    name = f"bench_recreate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{url}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(f"{url}/{name}", autocommit=True) as bench:
            bench.execute("CREATE TABLE left_by_the_other_side (x int)")

        baseline.database_recreate(f"{url}/{name}")

        with psycopg.connect(f"{url}/{name}") as bench:
            found = bench.execute("SELECT to_regclass('left_by_the_other_side')").fetchone()
        assert found == (None,)
    finally:
        with psycopg.connect(f"{url}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("url", ["postgres://postgres@127.0.0.1:5432/postgres", "postgres://127.0.0.1/"])
def test_the_server_s_own_databases_are_never_dropped(url):
    with pytest.raises(baseline.BaselineError, match="not a database the bench may drop"):
        baseline.database_recreate(url)


@requires_postgres
def test_the_pgbench_database_is_made_when_missing_and_kept_when_there():
    import psycopg
    from django.conf import settings

    server = settings.DATABASES["default"]
    url = f"postgres://{server['USER']}@{server['HOST'] or '127.0.0.1'}:{server['PORT'] or 5432}"
    name = f"bench_ensure_{uuid.uuid4().hex[:8]}"
    assert baseline.pgbench_database_url(f"{url}/{name}") == f"{url}/{name}_pgbench"
    try:
        baseline.database_ensure(f"{url}/{name}")
        with psycopg.connect(f"{url}/{name}", autocommit=True) as made:
            made.execute("CREATE TABLE kept (x int)")

        baseline.database_ensure(f"{url}/{name}")

        with psycopg.connect(f"{url}/{name}") as again:
            assert again.execute("SELECT to_regclass('kept')::text").fetchone() == ("kept",)
    finally:
        with psycopg.connect(f"{url}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
