"""`make dev`, the README's one command for a development run on PostgreSQL and Redis,
run as written (PostgreSQL and Redis: skipped without them).

Against the test database and a Celery queue of its own, it migrates, bootstraps the
sandbox and runs web, a worker and beat. Through its web server the README's
walk-through pays, and its webhook walk-through receives the payment's events, sent
by the worker process (the web process only queues them); beat's periodic sweep
reaches the worker. Ctrl-C (SIGINT to the command's process group, as a terminal
sends it) then stops every process it started, grandchildren included.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import requires_redis
from tests.events.test_readme_webhooks import webhooks_script
from tests.kernel.test_readme import for_server, walkthrough_script
from tests.proof.processes import free_port
from tests.support.worker import database_url

ROOT = Path(__file__).resolve().parents[2]


def session_processes(session: int) -> set[int]:
    """Every live process of a session (what the command started, however deep)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold spaces, so split after it.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[3]) == session:
            found.add(int(entry.name))
    return found


class Output:
    """The command's output, read as it comes."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, seconds: float) -> re.Match:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text(), re.M)
            if found:
                return found
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} in:\n{self.text()[-6000:]}")


def healthy(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=5) as answer:  # noqa: S310 - loopback
                if answer.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)


@requires_redis
@pytest.mark.skipif(shutil.which("curl") is None, reason="the README uses curl")
@pytest.mark.django_db(transaction=True)
def test_make_dev_runs_web_worker_and_beat_and_ctrl_c_stops_them_all(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    var = tmp_path / "var"
    queue = f"test-dev-{uuid.uuid4().hex}"
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "BANKAPI_VAR_DIR": str(var),
        # Its own queue on the suite's Redis: no other test's worker takes its tasks.
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "CELERY_WEBHOOKS_QUEUE": f"{queue}-webhooks",
        # The suite's keys: the test database may hold rows they encrypted.
        "SECRET_KEY": settings.SECRET_KEY,
        "FIELD_ENCRYPTION_KEY": settings.FIELD_ENCRYPTION_KEY,
        "JWT_PRIVATE_KEY": settings.JWT_PRIVATE_KEY,
        "REQUEST_BUDGET_PER_TOKEN": "1000000000",
        "REQUEST_BUDGET_PER_ADDRESS": "1000000000",
    }
    # As a reader's shell has it: make dev chooses the development run itself, and the
    # settings are the project's (not the suite's).
    environment.pop("BANKAPI_ENV", None)
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    command = ["make", "dev", "HOST=127.0.0.1", f"PORT={port}", f"VENV={Path(sys.executable).parents[1]}"]
    dev = subprocess.Popen(
        command,
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a terminal's session: Ctrl-C goes to its foreground group
    )
    output = Output(dev)
    try:
        output.wait_for(r"^dev +\| serving on ", 300)
        output.wait_for(r"^worker +\| .*ready\.", 120)
        output.wait_for(r"^webhooks +\| .*ready\.", 120)
        output.wait_for(r"^beat +\| .*beat: Starting", 120)
        healthy(url, 60)
        sandbox = json.loads((var / "sandbox.json").read_text())
        assert sandbox["customer"]["accountId"]

        # The README's walk-throughs against it: a payment, then a receiver of its own
        # that gets that payment's two events, signed.
        (tmp_path / "reader" / "var").mkdir(parents=True)
        (tmp_path / "reader" / "var" / "sandbox.json").write_text(json.dumps(sandbox))
        script = for_server(walkthrough_script() + "\n" + webhooks_script(), url)
        reader = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path / "reader",
            env={**os.environ, "TMPDIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert reader.returncode == 0, reader.stdout + reader.stderr + output.text()[-6000:]
        verified = re.findall(r"^verified (\S+) (\S+) (\S+)$", reader.stdout, re.M)
        assert [kind for kind, _, _ in verified] == ["payment_request.accepted", "payment_request.settled"]

        # Sent by the webhooks worker: its log shows the deliveries, the web's and the
        # other worker's do not.
        text = output.text()
        assert re.search(r"^webhooks +\| .*webhook drain: [1-9][0-9]* delivered to endpoint", text, re.M)
        # (The worker's banner lists every registered task, drains included: not a run.)
        elsewhere = r"^(web|worker) +\| .*(webhook drain|Task events\.tasks\.deliveries_drain\[)"
        assert not re.search(elsewhere, text, re.M)
        # Beat's clock reaches the webhooks worker: the webhook sweep every 30 seconds.
        output.wait_for(r"^beat +\| .*Sending due task sweep-webhook-deliveries", 90)
        output.wait_for(r"^webhooks +\| .*Task events\.tasks\.deliveries_sweep\[.*\] succeeded", 60)

        started = session_processes(dev.pid)
        # make, the supervisor, runserver and its reloaded child, the two workers and
        # their pools, beat.
        assert len(started) >= 8, started
        os.killpg(dev.pid, signal.SIGINT)  # Ctrl-C
        dev.wait(timeout=60)
        output.thread.join(timeout=10)

        assert session_processes(dev.pid) == set()
        assert re.search(r"^dev +\| stopped$", output.text(), re.M)
    finally:
        for pid in session_processes(dev.pid):  # only if it did not stop them all
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        dev.wait(timeout=30)


def running_it_commands() -> tuple[str, dict[str, str]]:
    """docs/production.md's one-process-per-terminal block: its `export` line, and its
    `make worker`, `make webhooks` and `make beat` lines by name."""
    section = (
        (ROOT / "docs" / "production.md").read_text().split("### Running it", 1)[1].split("\n### ", 1)[0]
    )
    block = re.findall(r"```sh\n(.*?)```", section, re.S)[-1]
    export = next(line for line in block.splitlines() if line.startswith("export "))
    lines = {line.split("#")[0].strip() for line in block.splitlines()}
    assert {"make worker", "make webhooks", "make beat"} <= lines
    return export, {"worker": "make worker", "webhooks": "make webhooks", "beat": "make beat"}


@requires_redis
@pytest.mark.django_db(transaction=True)
def test_the_readme_worker_and_beat_commands_work_as_written(tmp_path):
    from config.celery import app

    export, commands = running_it_commands()
    # Only the database and Redis are the test's own: its database and its queue.
    export = re.sub(r"DATABASE_URL=\S+", f"DATABASE_URL={database_url()}", export)
    export = re.sub(r"REDIS_URL=\S+", f"REDIS_URL={os.environ['REDIS_URL']}", export)
    queue = f"test-dev-{uuid.uuid4().hex}"
    var = tmp_path / "var"
    var.mkdir()
    ours = {"BANKAPI_ENV", "DATABASE_URL", "REDIS_URL"}  # what the export line sets
    ours.add("DJANGO_SETTINGS_MODULE")  # the project's settings, not the suite's
    environment = {k: v for k, v in os.environ.items() if k not in ours}
    environment.update(
        BANKAPI_VAR_DIR=str(var),
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_WEBHOOKS_QUEUE=f"{queue}-webhooks",
        SECRET_KEY=settings.SECRET_KEY,
        FIELD_ENCRYPTION_KEY=settings.FIELD_ENCRYPTION_KEY,
        JWT_PRIVATE_KEY=settings.JWT_PRIVATE_KEY,
    )
    venv = f"VENV={Path(sys.executable).parents[1]}"
    started = {
        name: subprocess.Popen(
            ["bash", "-c", f"{export}\nexec {line} {venv}"],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for name, line in commands.items()
    }
    outputs = {name: Output(process) for name, process in started.items()}
    try:
        outputs["worker"].wait_for(r"ready\.", 180)
        outputs["webhooks"].wait_for(r"ready\.", 180)
        outputs["beat"].wait_for(r"beat: Starting", 180)
        # A task sent to the broker is run by the worker.
        app.conf.task_always_eager = False  # put back by the suite's _celery_eager fixture
        app.send_task("events.tasks.deliveries_sweep", queue=queue)
        outputs["worker"].wait_for(r"Task events\.tasks\.deliveries_sweep\[.*\] succeeded", 60)
        # Beat sends its periodic tasks (the webhook sweep every 30 seconds), the
        # webhooks worker runs them: they go to the queue of webhook deliveries.
        outputs["beat"].wait_for(r"Sending due task sweep-webhook-deliveries", 90)
        outputs["webhooks"].wait_for(r"Task events\.tasks\.deliveries_sweep\[.*\] succeeded", 60)
        # Beat keeps its schedule in the var folder, not in the project's.
        assert list(var.glob("celerybeat-schedule*"))
        assert not list(ROOT.glob("celerybeat-schedule*"))
    finally:
        for process in started.values():
            for pid in session_processes(process.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait(timeout=30)


def test_make_dev_without_a_database_says_so_and_stops_without_printing_its_password(tmp_path):
    """Runs anywhere: nothing listens on the port, so the migration fails at once."""
    environment = {k: v for k, v in os.environ.items() if k not in {"BANKAPI_ENV", "DJANGO_SETTINGS_MODULE"}}
    environment.update(
        DATABASE_URL=f"postgres://bank:s3cret-pw@127.0.0.1:{free_port()}/bankapi",
        REDIS_URL=f"redis://:r3dis-pw@127.0.0.1:{free_port()}/0",
        BANKAPI_VAR_DIR=str(tmp_path / "var"),
    )
    result = subprocess.run(
        ["make", "dev", f"PORT={free_port()}", f"VENV={Path(sys.executable).parents[1]}"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert result.returncode != 0
    assert re.search(r"^dev +\| manage.py migrate failed \(status 1\): are PostgreSQL", result.stdout, re.M)
    assert "postgres://bank:***@127.0.0.1:" in result.stdout and "redis://:***@127.0.0.1:" in result.stdout
    printed = result.stdout + result.stderr
    assert "s3cret-pw" not in printed and "r3dis-pw" not in printed
    assert "serving on" not in result.stdout
