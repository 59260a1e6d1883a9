"""The README's curl walk-through works against a running server, as written."""

import calendar
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pyotp
import pytest
import time_machine

from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun
from tests.conftest import embedded_only
from tests.support.busy_proxy import busy_proxy
from tests.support.embedded_server import embedded_gunicorn
from tests.support.shared_clock import python_command, shared_clock

README = Path(__file__).resolve().parents[2] / "README.md"


def walkthrough_script() -> str:
    section = README.read_text().split("## Walk-through", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


def for_server(script: str, url: str) -> str:
    """README blocks against the server at `url`, with this interpreter for `.venv/bin/python`
    (following the test's shared clock where the shell is given one: a wait for the
    next TOTP step moves that clock, tests/support/shared_clock.py)."""
    python = shlex.join(python_command(sleep_moves=True))
    return script.replace("http://127.0.0.1:${PORT:-8000}", url).replace(".venv/bin/python", python)


def run_blocks(script: str, folder: Path, timeout: int = 150) -> subprocess.CompletedProcess[str]:
    """`script` in a bash of its own run from `folder`; its temporary folders (mktemp)
    go to `folder/scratch`. The test (and its live server) and the shell share a clock
    meanwhile: where the blocks wait for the next TOTP code, the clock moves instead."""
    scratch = folder / "scratch"
    scratch.mkdir(exist_ok=True)
    with shared_clock() as clock:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "TMPDIR": str(scratch), **clock.environment()},
        )


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_readme_walkthrough_runs_end_to_end(transactional_db, live_server, sandbox, tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script(), live_server.url)

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    documents = [json.loads(chunk) for chunk in re.findall(r"^\{\n.*?^\}$", out, re.S | re.M)]
    capabilities, requests_list, transactions = documents
    assert sandbox["customer"]["accountId"] in {a["accountId"] for a in capabilities["data"]["accounts"]}

    request_id = re.search(r"^payment request (\S+)$", out, re.M).group(1)
    # The replay: the header, then the first payment's body with the same requestId.
    assert re.search(rf"^Idempotent-Replayed: true.*?{request_id}", out, re.M | re.I | re.S)
    pending = [r for r in requests_list["data"]["paymentRequests"] if r["requestId"] == request_id]
    assert [r["status"] for r in pending] == ["PENDING"]
    booked = [t for t in transactions["data"]["transactions"] if t.get("requestId") == request_id]
    assert [(t["direction"], t["amount"]) for t in booked][0] == ("DEBIT", "25.00")


def first_block() -> str:
    """The walk-through's first block: its helpers, then a sign-in and capabilities."""
    return re.findall(r"```bash\n(.*?)```", README.read_text().split("## Walk-through", 1)[1], re.S)[0]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_a_sign_in_answered_429_is_sent_again_after_its_retry_after(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    port = int(live_server.url.rsplit(":", 1)[1])

    with busy_proxy(port, refuse={1, 2}) as proxy:
        result = run_blocks(for_server(first_block(), f"http://127.0.0.1:{proxy.port}"), tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert proxy.refused == [1, 2] and proxy.logins == 3
    assert result.stderr.count("The API answered HTTP/1.1 429 Too Many Requests: sending again in 1 s") == 2
    capabilities = json.loads(re.search(r"^\{\n.*?^\}$", result.stdout, re.S | re.M).group(0))
    assert capabilities["success"] is True


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_a_long_retry_after_is_not_waited_for_and_the_step_fails_with_the_answer(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    port = int(live_server.url.rsplit(":", 1)[1])

    with busy_proxy(port, refuse={1}, retry_after="900") as proxy:
        result = run_blocks(for_server(first_block(), f"http://127.0.0.1:{proxy.port}"), tmp_path, timeout=60)

    assert result.returncode != 0 and proxy.logins == 1
    assert "sending again" not in result.stderr
    assert "This step failed. The API answered: " in result.stderr and "TOO_MANY_REQUESTS" in result.stderr


def helpers() -> str:
    """The walk-through's shell helpers (everything before its first variable)."""
    return walkthrough_script().split("\nAPI=", 1)[0]


@pytest.mark.parametrize(
    "answer",
    [
        '{"success": false, "code": "INVALID_CREDENTIALS", "message": "Invalid or already used code"}',
        "<html><body>Bad Gateway</body></html>",
    ],
)
def test_a_failed_step_prints_the_api_answer_not_a_python_error(answer):
    script = helpers() + '\nACCESS=$(field \'["data"]["access_token"]\')\necho reached'

    # A plain bash, as a reader's terminal runs it: the walk-through's own `set -e` stops it.
    result = subprocess.run(["bash", "-c", script], input=answer, capture_output=True, text=True, timeout=60)

    assert result.returncode != 0 and "reached" not in result.stdout
    assert result.stderr == f"This step failed. The API answered: {answer}\n"


def test_a_step_that_worked_gives_the_field():
    script = helpers() + '\nfield \'["data"]["access_token"]\''

    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        input='{"success": true, "data": {"access_token": "eyJ.x.y"}}',
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert (result.returncode, result.stdout) == (0, "eyJ.x.y\n")


def test_the_readme_says_how_to_start_afresh_and_what_a_batch_items_id_is():
    text = README.read_text()
    afresh = text.split("**Starting the sandbox afresh.**", 1)[1].split("\n\n", 1)[0]
    assert "`rm -rf var`" in afresh and "`make run` again" in afresh
    batches = text.split("## Batch payments: from verify to completed items", 1)[1].split("\n## ", 1)[0]
    assert "an item's\n`id` is its payment's `requestId`" in batches


def test_the_walkthrough_says_a_totp_code_is_accepted_once():
    section = README.read_text().split("## Walk-through", 1)[1].split("\n## ", 1)[0]
    assert "A code is accepted once" in section


def test_management_users_sign_in_without_a_program_as_the_readme_says(api, sandbox):
    readme = README.read_text()
    assert "Management users (the sandbox's `operator`) belong to no program" in readme
    operator = sandbox["operator"]
    body = {"email": operator["email"], "password": operator["password"]}

    with_program = api.post(
        "/v1/auth/login", body, format="json", HTTP_X_PROGRAM_ID=sandbox["consumerProgramId"]
    )
    without = api.post("/v1/auth/login", body, format="json")

    assert (with_program.status_code, with_program.json()["code"]) == (401, "INVALID_CREDENTIALS")
    assert without.status_code == 200 and without.json()["data"]["session_token"]


def test_make_run_says_what_to_open_before_it_serves():
    result = subprocess.run(
        ["make", "-n", "run", "VENV=/nonexistent-venv"],
        cwd=README.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )

    out = result.stdout
    assert result.returncode == 0, result.stderr
    said = out.index("/v1/docs")
    assert said < out.index("runserver")
    assert (
        "/admin/" in out[said - 400 : out.index("runserver")] and "operator" in out and "Walk-through" in out
    )


def clock_script() -> str:
    section = README.read_text().split("### Sandbox clock", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, re.S))


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
def test_the_sandbox_clock_example_pays_the_schedule_it_makes(
    transactional_db, live_server, sandbox, tmp_path
):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "sandbox.json").write_text(json.dumps(sandbox))
    script = for_server(walkthrough_script() + "\n" + clock_script(), live_server.url)

    result = run_blocks(script, tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    schedule_id, first = re.search(r"^schedule (\S+) from (\S+)$", out, re.M).groups()
    first_day = date.fromisoformat(first)
    runs = first_day, month_end(first_day, 1), month_end(first_day, 2)
    ran = json.loads(re.search(r'^\{"success":\s*true,\s*"data":\s*\{"date".*$', out, re.M).group(0))
    assert ran == {"success": True, "data": {"date": runs[2].isoformat(), "paid": 3, "held": 0, "failed": 0}}
    # The schedule the first step made is what was paid, on its three month-end days.
    schedule = ScheduledPayment.objects.get(id=schedule_id)
    assert str(schedule.account_id) == sandbox["customer"]["accountId"]
    assert [
        run.run_date for run in ScheduleRun.objects.filter(schedule=schedule).order_by("run_date")
    ] == list(runs)
    assert PaymentRequest.objects.filter(schedule=schedule).count() == 3
    listed = json.loads(re.findall(r"^\{\n.*?^\}$", out, re.S | re.M)[-1])
    (shown,) = [s for s in listed["data"]["scheduledPayments"] if s["scheduleId"] == schedule_id]
    assert shown["nextRunDate"] == month_end(first_day, 3).isoformat()


def month_end(day: date, months: int) -> date:
    """The day of month of `day` `months` later, or that month's last day."""
    year, month = divmod(day.month - 1 + months, 12)
    year, month = day.year + year, month + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def test_the_sandbox_clock_dates_work_whatever_today_is():
    """The example's date step, run on every day of two years (one with a 29 February)."""
    (code,) = re.findall(r'python3 -c "\n(.*?)"\)', clock_script(), re.S)
    start = date(2027, 1, 1)
    for offset in range(2 * 366):
        today = start + timedelta(days=offset)
        with time_machine.travel(
            datetime(today.year, today.month, today.day, 23, 59, tzinfo=UTC), tick=False
        ):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(code, {})  # noqa: S102 - the README's own code, which is what is tested
        first, last = (date.fromisoformat(part) for part in printed.getvalue().split())
        assert today < first and first.day == 31, today
        # A shorter month follows: the second run shows the month-end rule.
        assert month_end(first, 1).day < 31, today
        assert last == month_end(first, 2) and last.day == 31, today
        assert (last - today).days <= 366, today  # what the sandbox clock takes


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_the_contents_list_every_section_in_order_and_each_link_finds_its_heading():
    text = README.read_text()
    contents = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    links = re.findall(r"^( *)- \[(.*?)\]\(#(.*?)\)$", contents, re.M)
    body = text.split("## Contents\n", 1)[1]
    headings = re.findall(r"^(##+) (.*)$", re.sub(r"```.*?```", "", body, flags=re.S), re.M)
    anchors = {github_anchor(title) for _, title in headings}

    assert all(anchor in anchors for _, _, anchor in links), [a for _, _, a in links if a not in anchors]
    top = [title for level, title in headings if level == "##"]
    assert [title for indent, title, _ in links if not indent] == top


def readme_blocks() -> str:
    """Every bash block of the walk-throughs, in the README's order."""
    walkthroughs = README.read_text().split("## Walk-through", 1)[1]
    return "\n".join(re.findall(r"```bash\n(.*?)```", walkthroughs, re.S))


def embedded_environment(var: Path) -> dict[str, str]:
    """What `make run` gives its commands: the embedded default, its files in `var`."""
    environment = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    return {**environment, "BANKAPI_VAR_DIR": str(var), "BANKAPI_ENV": "development"}


@embedded_only
@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-throughs use curl")
def test_every_walkthrough_runs_in_order_in_one_shell(tmp_path):
    """A reader's run: `make run`'s server (gunicorn here, on a port the kernel picks,
    with `PORT` exported as the README says), then every block pasted in order into
    one bash, as written; the blocks that sign a user in again or confirm with a code
    wait for the next code themselves (on a clock the server and the shell share,
    which that wait moves: tests/support/shared_clock.py)."""
    var = tmp_path / "var"
    var.mkdir()
    environment = embedded_environment(var)
    manage = [sys.executable, str(README.parent / "manage.py")]
    subprocess.run(
        [*manage, "migrate", "--noinput"], env=environment, check=True, capture_output=True, timeout=300
    )
    sandbox = subprocess.run(
        [*manage, "bootstrap_sandbox", "--json"],
        env=environment,
        check=True,
        capture_output=True,
        timeout=120,
    ).stdout
    (var / "sandbox.json").write_bytes(sandbox)
    # The project folder as the reader has it: var/ and the .venv `make run` made
    # (its python following the shared clock).
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {shlex.join(python_command(sleep_moves=True))} "$@"\n')
    python.chmod(0o755)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    # The third sign-in meets others at once: 429, sent again after its Retry-After.
    with (
        shared_clock() as clock,
        embedded_gunicorn(var, clock=clock) as port,
        busy_proxy(port, refuse={3}) as proxy,
    ):
        result = subprocess.run(
            ["bash", "-c", readme_blocks()],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PORT": str(proxy.port), "TMPDIR": str(scratch), **clock.environment()},
        )

    assert result.returncode == 0, result.stdout + result.stderr
    assert proxy.refused == [3] and "429 Too Many Requests: sending again in 1 s" in result.stderr
    out = result.stdout
    # Each walk-through reached its end: the lines each one prints.
    for line in (
        r"^payment request \S+$",
        r"^statements in \S+/statement\.csv and \S+/statement\.xml$",
        r"^batch \S+$",
        r"^application \S+$",
        r"^same bytes$",
        r"^a changed body: refused$",
        r"^schedule \S+ from \S+$",
    ):
        assert re.search(line, out, re.M), (line, out[-3000:], result.stderr[-3000:])
    assert '"pan"' in out and '"status": "PARTIALLY_FAILED"' in out
    assert out.count("<GrpSts>PART</GrpSts>") == 2  # the file's pain.002, drafted and paid
    assert re.search(r'"paid":\s*3,\s*"held":\s*0,\s*"failed":\s*0', out)
    # Nothing written into the project folder: the files went to the temporary folder.
    assert sorted(path.name for path in tmp_path.iterdir()) == [".venv", "scratch", "var"]
    written = {path.name for folder in scratch.iterdir() for path in folder.iterdir()}
    assert {
        "statement.csv",
        "statement.xml",
        "payments.xml",
        "draft-status.xml",
        "batch-status.xml",
    } <= written


@embedded_only
def test_the_code_helper_waits_for_the_next_code_once_this_shell_sent_one():
    """The service takes a TOTP code once: the walk-throughs' `code` gives the current
    one, and the next one where this shell already sent the current one. Its wait,
    on a shared clock, moves the clock to the next step rather than passing time."""
    secret = pyotp.random_base32()
    script = helpers() + f'\ncode {secret}; code {secret}; echo "$WORK"'

    with shared_clock() as clock:
        started = time.time()
        result = subprocess.run(
            ["bash", "-c", for_server(script, "http://127.0.0.1:1")],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, **clock.environment()},
        )
        moved = clock.offset

    assert result.returncode == 0, result.stderr
    first, second, work = result.stdout.split()
    step = int(started) // 30
    totp = pyotp.TOTP(secret)
    (sent,) = [s for s in (step, step + 1) if totp.at(s * 30) == first]
    # The second waited for the next 30-second step, and gave its code: the wait
    # moved the shared clock there (at most one step on).
    assert second == totp.at((sent + 1) * 30) != first
    assert 0 < moved <= 30.5
    shutil.rmtree(work)


def test_another_port_is_served_as_the_readme_says():
    said = README.read_text().split("**Another port.**", 1)[1].split("\n\n", 1)[0]
    assert (
        "`make run PORT=8001`" in said
        and "`WEBAUTHN_ORIGINS=http://localhost:8001 make run PORT=8001`" in said
    )
    assert "export PORT=8001" in said and "API=http://127.0.0.1:${PORT:-8000}" in walkthrough_script()

    result = subprocess.run(
        ["make", "-n", "run", "PORT=8001", "VENV=/nonexistent-venv"],
        cwd=README.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert "runserver 127.0.0.1:8001" in result.stdout and "http://127.0.0.1:8001/v1/docs" in result.stdout
