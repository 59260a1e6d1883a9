"""The bench's server and environment: the tools it needs, production settings
for a scratch run, gunicorn (or another server) on a free port, Django set up
in this process."""

import os
import runpy
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from baseline import UNLIMITED_BUDGETS

ROOT = Path(__file__).resolve().parent.parent


def fail(message: str) -> None:
    print(f"bench/payments: {message}", file=sys.stderr)
    raise SystemExit(2)


def check_tools() -> None:
    if shutil.which("wrk") is None:
        fail("wrk is not installed. On Debian or Ubuntu: apt-get update && apt-get install -y wrk")
    if shutil.which("pgbench") is None:
        fail("pgbench is not installed. On Debian or Ubuntu: apt-get install -y postgresql-contrib")
    if not (ROOT / ".venv" / "bin" / "gunicorn").exists():
        fail("gunicorn is missing from .venv: run 'make install'")


def check_server(server: str) -> None:
    if not (ROOT / ".venv" / "bin" / server).exists():
        fail(f"{server} is missing from .venv: run 'make install' (granian: pip install granian)")


def production_environment(database_url: str, work_dir: Path) -> dict[str, str]:
    """The production settings the service needs, with throwaway secrets made now
    (never written anywhere but this run's temporary folder)."""
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    static_root = work_dir / "static"
    static_root.mkdir()
    return {
        "BANKAPI_ENV": "production",
        "DJANGO_DEBUG": "false",
        # Plain HTTP on the loopback, no TLS proxy in front: no redirect to https.
        "SECURE_SSL_REDIRECT": "false",
        "DATABASE_URL": database_url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "JWT_PRIVATE_KEY": pem,
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        # Clients reach gunicorn directly, no proxy in front.
        "TRUSTED_PROXY_COUNT": "0",
        "BANKAPI_VAR_DIR": str(work_dir / "var"),
        "STATIC_ROOT": str(static_root),
        "LOG_LEVEL": "WARNING",
        # The bench reaches PostgreSQL directly, so as deploy/ configures a direct
        # connection: prepared statements on (DATABASE_PREPARED_STATEMENTS=false in
        # the bench's environment measures the PgBouncer 1.18 setting instead).
        "DATABASE_PREPARED_STATEMENTS": os.environ.get("DATABASE_PREPARED_STATEMENTS", "true"),
        **UNLIMITED_BUDGETS,
    }


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def machine() -> str:
    from django.db import connection

    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    return f"{os.cpu_count()} x {model}, PostgreSQL {version}, load average {os.getloadavg()[0]:.1f}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deployed_threads() -> int:
    """Requests one web process serves at a time as deployed: the `threads` of
    deploy/gunicorn.conf.py (with more than one, gunicorn runs its threaded
    worker, gthread, whatever worker class is asked for)."""
    return int(runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))["threads"])


# The bare ceiling (bench/bare_payments.py), served like the service.
BARE_APPLICATION = "bare_payments:application"


def server_command(
    server: str, port: int, workers: int, application: str = "config.wsgi:application", root: Path = ROOT
) -> list[str]:
    """The command serving `application` (the service's `config.wsgi`, or the
    bare ceiling) of the checkout at `root` on the port: gunicorn with that
    checkout's deployed configuration (threaded workers), or granian's WSGI
    interface with as many blocking threads per worker as gunicorn's threads,
    so that both serve the same number of requests at a time per process."""
    if server == "granian":
        return [
            str(ROOT / ".venv" / "bin" / "granian"),
            "--interface=wsgi",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--workers={workers}",
            f"--blocking-threads={deployed_threads()}",
            "--no-ws",
            "--log-level=warning",
            application,
        ]
    return [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        application,
        f"--config={root / 'deploy' / 'gunicorn.conf.py'}",
        f"--pythonpath={ROOT / 'bench'}",
        f"--workers={workers}",
        f"--bind=127.0.0.1:{port}",
        "--log-level=warning",
        "--timeout=60",
    ]


def start_server(
    env: dict[str, str],
    workers: int,
    server: str = "gunicorn",
    application: str = "config.wsgi:application",
    root: Path = ROOT,
) -> tuple[subprocess.Popen, str]:
    """`server_command` started (from `root`: another checkout serves its own
    code), once it answers."""
    for _ in range(5):
        port = free_port()
        process = subprocess.Popen(
            server_command(server, port, workers, application, root), cwd=root, env={**os.environ, **env}
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:  # noqa: S310
                    if answer.status == 200:
                        return process, base
            except urllib.error.HTTPError:
                # The bare ceiling has no /healthz: any HTTP answer says it serves.
                return process, base
            except OSError:
                time.sleep(0.2)
        process.terminate()
        process.wait()
    fail(f"{server} did not start")


def django_start(env: dict[str, str]) -> None:
    """Django set up in this process with the bench's environment (`env`, on
    production settings), its database migrated and emptied."""
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("flush", verbosity=0, interactive=False)


@dataclass(frozen=True)
class BrokerBench:
    """Where a bench whose work runs on Celery workers through Redis runs."""

    env: dict[str, str]
    redis_url: str
    work_dir: Path


def broker_bench_environment(name: str) -> BrokerBench:
    """The production environment of a bench named `name` that needs Redis
    (BENCH_REDIS_URL) beside its PostgreSQL database (BENCH_DATABASE_URL):
    queues of its own, loopback webhook receivers allowed (WEBHOOKS_ALLOW_LOOPBACK,
    as a bench on one host may), the Redis database emptied."""
    database_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    redis_url = os.environ.get("BENCH_REDIS_URL")
    if not database_url or not database_url.startswith(("postgres://", "postgresql://")):
        fail("set BENCH_DATABASE_URL to a PostgreSQL database the bench may wipe")
    if not redis_url:
        fail("set BENCH_REDIS_URL: the work runs on workers, through the broker")
    work_dir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    env = production_environment(database_url, work_dir)
    queue = f"bench-{name}-{uuid.uuid4().hex[:8]}"
    env.update(
        WEBHOOKS_ALLOW_LOOPBACK="true",
        REDIS_URL=redis_url,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_WEBHOOKS_QUEUE=f"{queue}-webhooks",
    )
    flush_redis(redis_url)
    return BrokerBench(env=env, redis_url=redis_url, work_dir=work_dir)
