"""Real server processes for the crash tests: gunicorn and a Celery worker on the
test database, each on a free port or queue of its own, and SIGKILL for them."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_database_url() -> str:
    """The URL of the database pytest-django made, for processes started by a test."""
    db = settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # As in the suite's own process: the servers of different tests share one Redis
    # and one client address, so the request budgets are out of the way unless a
    # test sets them (the budget tests do, through `extra`).
    env.update(REQUEST_BUDGET_PER_TOKEN="1000000000", REQUEST_BUDGET_PER_ADDRESS="1000000000")
    env.update(DATABASE_URL=test_database_url(), PYTHONUNBUFFERED="1", **extra)
    return env


def children_of(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the ppid follows the last ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            children.append(int(entry.name))
    return children


def kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False


def request(
    port: int,
    method: str,
    path: str,
    body: dict | None = None,
    headers: dict | None = None,
    timeout: float = 15,
):
    """One HTTP request; (status, headers, parsed body). Raises OSError or
    http.client errors when the connection breaks (a killed worker)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        payload = json.dumps(body) if body is not None else None
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        connection.request(method, path, body=payload, headers=all_headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, dict(response.getheaders()), json.loads(raw) if raw else None
    finally:
        connection.close()


def shell_command(line: str) -> list[str]:
    """A process-list command line (`${VAR:-default}` expanded by the shell), run so
    that the process itself, not a shell, has the pid a test kills."""
    return ["bash", "-c", f"exec {line}"]


class Gunicorn:
    """A gunicorn master; `command` runs a deployment's own command line instead,
    bound through GUNICORN_BIND and sized through WEB_CONCURRENCY."""

    def __init__(
        self,
        env: dict[str, str],
        workers: int,
        log: Path,
        threads: int = 1,
        command: list[str] | None = None,
    ):
        self.port = free_port()
        self.log = log.open("ab")
        if command is not None:
            env = {**env, "GUNICORN_BIND": f"127.0.0.1:{self.port}", "WEB_CONCURRENCY": str(workers)}
        self.process = subprocess.Popen(  # noqa: S603
            command or [
                sys.executable, "-m", "gunicorn", "config.wsgi:application",
                # The deployment's own settings (metrics directory hooks among them);
                # the options below win over it.
                "--config", str(ROOT / "deploy" / "gunicorn.conf.py"),
                "--bind", f"127.0.0.1:{self.port}",
                "--workers", str(workers),
                # More than one: gunicorn's threaded worker (gthread).
                "--threads", str(threads),
                "--timeout", "30",
                "--graceful-timeout", "2",
                # Workers fork from a master that has loaded the app: a killed one is
                # replaced in milliseconds. No control socket: its default path is
                # shared by every gunicorn of the user.
                "--preload",
                "--no-control-socket",
            ],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.wait_ready()

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if request(self.port, "GET", "/healthz")[0] == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.2)
        raise AssertionError(f"gunicorn did not answer on port {self.port}")

    def workers(self) -> list[int]:
        return children_of(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for pid in self.workers():
            kill(pid)
        self.log.close()


class CeleryWorker:
    """One worker process (solo pool) on a queue of its own; restartable after a kill.

    `command` runs a deployment's own command line instead, on the queue its
    environment names; a kill then takes the pool's processes too."""

    def __init__(self, env: dict[str, str], log: Path, command: list[str] | None = None):
        self.command = command
        self.queue = (
            env.get("CELERY_TASK_DEFAULT_QUEUE", "celery") if command else f"proof-{uuid.uuid4().hex[:8]}"
        )
        self.env = {**env, "CELERY_TASK_DEFAULT_QUEUE": self.queue}
        if not command:
            # Its own webhooks queue too, which it also reads: the drains it
            # queues go there (a deployment runs a worker of their own for it).
            self.env["CELERY_WEBHOOKS_QUEUE"] = f"{self.queue}-webhooks"
        self.log = log.open("ab")
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603
            self.command or [
                sys.executable, "-m", "celery", "-A", "config", "worker",
                "--pool", "solo", "--queues", f"{self.queue},{self.queue}-webhooks", "--loglevel", "WARNING",
                "--without-heartbeat", "--without-gossip", "--without-mingle",
            ],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL, with no warning: the master and its pool processes."""
        children = children_of(self.process.pid)
        kill(self.process.pid)
        for pid in children:
            kill(pid)
        self.process.wait()

    def kill_and_restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        self.kill()
        self.log.close()
