"""Real `celery -A config worker` processes for the worker tests (PostgreSQL and
Redis: skipped without them), reading queues of their own (a default one and a
webhooks one) against the test database, so tests running at once never take
each other's tasks."""

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

from config.celery import app


def database_url() -> str:
    """The test database, for a process started by the test."""
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


class Workers:
    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.queue = f"test-{name}-{uuid.uuid4().hex}"
        self.webhooks_queue = f"{self.queue}-webhooks"
        self.env = env
        self.processes: list[subprocess.Popen] = []

    def start(self, output=None, queues: list[str] | None = None) -> subprocess.Popen:
        """A worker reading `queues` (by default both of the test's); its stdout and
        stderr go to `output` (a file) when given."""
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": os.environ["REDIS_URL"],
            "CELERY_TASK_DEFAULT_QUEUE": self.queue,
            "CELERY_WEBHOOKS_QUEUE": self.webhooks_queue,
            **self.env,
        }
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo"]
        command += ["--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        command += [
            "-Q",
            ",".join(queues or [self.queue, self.webhooks_queue]),
            "-n",
            f"{uuid.uuid4().hex}@%h",
        ]
        worker = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
        )
        self.processes.append(worker)
        return worker

    def stop(self) -> None:
        for worker in self.processes:
            if worker.poll() is None:
                worker.terminate()
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()


@contextmanager
def celery_workers(name: str, env: dict[str, str] | None = None) -> Iterator[Workers]:
    """Workers to `start()`; meanwhile tasks sent from the test go to their queue
    through Redis instead of running in-process."""
    workers = Workers(name, env or {})
    previous = (app.conf.task_always_eager, app.conf.task_default_queue, app.conf.webhooks_queue)
    app.conf.task_always_eager, app.conf.task_default_queue = False, workers.queue
    app.conf.webhooks_queue = workers.webhooks_queue
    try:
        yield workers
    finally:
        app.conf.task_always_eager, app.conf.task_default_queue, app.conf.webhooks_queue = previous
        workers.stop()
