"""`make dev`: a development run against PostgreSQL and Redis in one command.

Migrates, bootstraps the sandbox (writing `sandbox.json` into the var folder, as
`make run` does), then runs the web server, a Celery worker, a webhooks worker (the
queue of webhook deliveries, `CELERY_WEBHOOKS_QUEUE`, default `webhooks`) and beat
side by side, each line of their output prefixed with its name. Ctrl-C (or
SIGTERM) stops them all, children included; if one of them exits on its own, the others are stopped
too and the exit status is non-zero.

It is a development run (`BANKAPI_ENV=development`: secrets generated into the var
folder and shared by the processes, `DEBUG` on), never a deployment:
`DATABASE_URL` and `REDIS_URL` say where PostgreSQL and Redis are, defaulting to a
local `bankapi` database and Redis database 0.

    python scripts/dev.py [--host 127.0.0.1] [--port 8000]
"""

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import IO
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bankapi"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_WEBHOOKS_QUEUE = "webhooks"  # as the settings name it
# How long a process may take to stop on SIGTERM (a worker finishing its task)
# before it is killed.
STOP_SECONDS = 20.0


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["BANKAPI_ENV"] = "development"
    env.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    env.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    env.setdefault("BANKAPI_VAR_DIR", str(ROOT / "var"))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def shown(url: str) -> str:
    """A URL as printed: any password in it replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def say(text: str) -> None:
    print(f"{'dev':<8} | {text}", flush=True)


def prepare(env: dict[str, str]) -> None:
    """Migrate and bootstrap the sandbox; stop at the first failure."""
    var = Path(env["BANKAPI_VAR_DIR"])
    var.mkdir(parents=True, exist_ok=True)
    say(f"database {shown(env['DATABASE_URL'])}, Redis {shown(env['REDIS_URL'])}, var folder {var}")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True)
    sandbox = subprocess.run(
        [sys.executable, "manage.py", "bootstrap_sandbox", "--json"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    (var / "sandbox.json").write_text(sandbox)
    say(f"sandbox users and ids in {var / 'sandbox.json'}")


def commands(env: dict[str, str], host: str, port: int) -> dict[str, list[str]]:
    celery = [sys.executable, "-m", "celery", "-A", "config"]
    schedule = str(Path(env["BANKAPI_VAR_DIR"]) / "celerybeat-schedule")
    return {
        "web": [sys.executable, "manage.py", "runserver", f"{host}:{port}"],
        "worker": [*celery, "worker", "--loglevel=INFO"],
        "webhooks": [
            *celery,
            "worker",
            "-Q",
            env.get("CELERY_WEBHOOKS_QUEUE", DEFAULT_WEBHOOKS_QUEUE),
            "--loglevel=INFO",
            "--concurrency=1",
            "-n",
            "webhooks@%h",
        ],
        "beat": [*celery, "beat", "--loglevel=INFO", f"--schedule={schedule}"],
    }


def relay(name: str, stream: IO[str]) -> None:
    for line in stream:
        print(f"{name:<8} | {line}", end="", flush=True)


class Supervisor:
    def __init__(self) -> None:
        self.processes: dict[str, subprocess.Popen[str]] = {}
        self.stopping = threading.Event()

    def start(self, name: str, command: list[str], env: dict[str, str]) -> None:
        # A process group of its own: Ctrl-C reaches only this supervisor, which then
        # stops each group whole (runserver's reloader and the worker's pool included).
        process = subprocess.Popen(  # noqa: S603 - the fixed commands of `commands()`
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            process_group=0,
        )
        self.processes[name] = process
        assert process.stdout is not None
        threading.Thread(target=relay, args=(name, process.stdout), daemon=True).start()

    def stop(self, _signum: int = 0, _frame: FrameType | None = None) -> None:
        self.stopping.set()

    def watch(self) -> int:
        """Until a signal or a process exiting; then stop them all. The exit status."""
        status = 0
        while not self.stopping.is_set():
            for name, process in self.processes.items():
                if process.poll() is not None:
                    say(f"{name} exited with status {process.returncode}: stopping the others")
                    status = 1
                    self.stopping.set()
                    break
            self.stopping.wait(0.5)
        self.shutdown()
        return status

    def shutdown(self) -> None:
        say("stopping web, worker, webhooks and beat")
        for process in self.processes.values():
            signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        # Whatever a process left behind in its group (a reloader's child, a pool process).
        for process in self.processes.values():
            signal_group(process.pid, signal.SIGKILL)
        say("stopped")


def signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()

    supervisor = Supervisor()
    signal.signal(signal.SIGINT, supervisor.stop)
    signal.signal(signal.SIGTERM, supervisor.stop)
    env = environment()
    try:
        prepare(env)
    except subprocess.CalledProcessError as failed:
        say(
            f"{' '.join(failed.cmd[1:3])} failed (status {failed.returncode}): are PostgreSQL and its "
            f"database up (createdb), and Redis? DATABASE_URL={shown(env['DATABASE_URL'])}"
        )
        return 1
    if supervisor.stopping.is_set():
        return 1
    for name, command in commands(env, args.host, args.port).items():
        supervisor.start(name, command, env)
    root = f"http://{args.host}:{args.port}"
    say(f"serving on {root}/ (Ctrl-C stops web, worker, webhooks and beat)")
    say(f"open next: {root}/v1/docs (Swagger UI), {root}/admin/ (the sandbox operator of sandbox.json)")
    return supervisor.watch()


if __name__ == "__main__":
    sys.exit(main())
