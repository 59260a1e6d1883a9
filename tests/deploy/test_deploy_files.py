"""The files of deploy/ an operator installs, read as the tools that use them read
them: PgBouncer's outage settings, the environment template, Prometheus' scrape
job and alerting rules (with promtool when installed)."""

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMTOOL = shutil.which("promtool")


def pgbouncer() -> configparser.SectionProxy:
    ini = configparser.ConfigParser(delimiters=("=",), comment_prefixes=(";", "#"), interpolation=None)
    ini.read(DEPLOY / "pgbouncer.ini")
    return ini["pgbouncer"]


def gunicorn_timeout() -> int:
    namespace: dict = {}
    exec(compile((DEPLOY / "gunicorn.conf.py").read_text(), "gunicorn.conf.py", "exec"), namespace)  # noqa: S102
    return int(namespace["timeout"])


def test_pgbouncer_does_not_stretch_a_database_restart_into_seconds_of_errors():
    settings = pgbouncer()
    # PgBouncer's default waits 15 s after a failed login before it tries again:
    # a 0.2 s PostgreSQL restart cost every node 15 s of errors.
    assert int(settings["server_login_retry"]) <= 1
    assert int(settings["server_connect_timeout"]) <= 5
    # A client waiting for a server is answered (503) before gunicorn kills its worker.
    assert int(settings["query_wait_timeout"]) < gunicorn_timeout()


def test_pgbouncer_started_as_root_switches_to_a_user_of_its_own():
    # PgBouncer refuses to run as root and says only that.
    assert pgbouncer()["user"] == "postgres"


def test_the_environment_template_gives_metrics_counted_across_processes():
    lines = (DEPLOY / "bankapi.env.example").read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
    # Without it each gunicorn worker and Celery worker answers its own counts.
    assert values.get("PROMETHEUS_MULTIPROC_DIR", "").startswith("/")


def test_prometheus_loads_the_alerting_rules():
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    assert [Path(name).name for name in config["rule_files"]] == ["bankapi-alerts.yml"]
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())
    names = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    assert {"BankapiDatabaseUnavailable", "BankapiServerErrors", "BankapiBatchStalled"} <= names
    assert "BankapiRedisDown" in names


# What an outage rule reads: a node's scrape, Redis' gauge, the database's 503s
# (alone or among the 5xx), the database gauges gone from the scrape, tasks that
# could not be queued.
OUTAGE_SIGNALS = re.compile(
    r"(?<![\w])up\{|bankapi_redis_up|status=\"503\"|status=~\"5\.\.\"|absent\(|task_publish_failures"
)
DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> float:
    """A Prometheus duration (`90s`, `1m30s`, `2h`) in seconds."""
    parts = DURATION_PART.findall(text)
    assert parts and "".join(number + unit for number, unit in parts) == text, text
    return sum(int(number) * SECONDS[unit] for number, unit in parts)


def alerting_rules() -> list[dict]:
    rules = yaml.safe_load((DEPLOY / "alerts.yml").read_text())
    return [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


def test_an_outage_pages_only_once_it_has_lasted_a_minute():
    """A database, Redis or node outage of a second or two is ridden out (503
    with Retry-After, queued work swept up after): no rule about one may fire
    before the outage has lasted a minute."""
    outage_rules = {rule["alert"]: rule for rule in alerting_rules() if OUTAGE_SIGNALS.search(rule["expr"])}

    assert {
        "BankapiDown",
        "BankapiDatabaseUnavailable",
        "BankapiRedisDown",
        "BankapiServerErrors",
        "BankapiDatabaseGaugesAbsent",
        "BankapiTaskPublishFailures",
    } <= set(outage_rules)
    waits = {name: duration_seconds(str(rule.get("for", "0s"))) for name, rule in outage_rules.items()}
    assert {name: wait for name, wait in waits.items() if wait < 60} == {}


def test_every_alert_has_its_runbook_step():
    runbook = (ROOT / "docs" / "runbook.md").read_text()
    steps = set(re.findall(r"^### (Bankapi\w+)$", runbook, re.M))
    assert {rule["alert"] for rule in alerting_rules()} <= steps


@pytest.mark.skipif(PROMTOOL is None, reason="needs promtool (Debian's prometheus package)")
def test_the_alerts_fire_for_the_faults_they_are_for():
    """Blips that page no one and outages of two minutes that do, a stalled batch
    (tests/deploy/alerts_test.yml)."""
    checked = subprocess.run(  # noqa: S603
        [PROMTOOL, "check", "rules", str(DEPLOY / "alerts.yml")], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(  # noqa: S603
        [PROMTOOL, "test", "rules", "alerts_test.yml"],
        cwd=Path(__file__).parent, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert tested.returncode == 0, tested.stdout + tested.stderr
