"""/metrics from real processes: four gunicorn workers counting into one
multiprocess directory, and a real Prometheus scraping a running service."""

import http.client
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode, urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families

from events.endpoints import endpoint_create
from events.models import EventType
from tests.conftest import requires_postgres, requires_redis
from tests.payments.conftest import payments_url
from tests.proof.processes import CeleryWorker, Gunicorn, free_port, server_environment
from tests.support.receiver import start_receiver

PAYMENTS_ROUTE = "/v1/customers/{customerId}/accounts/{accountId}/payments"
# A process id above any kernel's pid_max: a process that is gone.
GONE = 999_999_999


def call(port: int, method: str, path: str, body: dict | None = None, headers: dict | None = None):
    """One request on a connection of its own (so gunicorn may hand it to any worker)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            method,
            path,
            body=json.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    status, body = call(port, "GET", "/metrics")
    assert status == 200, body
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def rise(before, after, name: str, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


@requires_postgres
def test_counts_are_exact_across_four_gunicorn_workers(
    transactional_db, account, beneficiary, customer_auth, tmp_path
):
    directory = tmp_path / "prometheus"
    directory.mkdir()
    # Left by an earlier run of the service: must not be summed into this one.
    (directory / f"counter_{GONE}.db").write_bytes(b"left over from an earlier run")
    # No broker: each worker runs its tasks in-process, as one host would.
    env = server_environment(PROMETHEUS_MULTIPROC_DIR=str(directory), REDIS_URL="")
    web = Gunicorn(env, 4, tmp_path / "gunicorn.log")
    try:
        headers = {"Authorization": customer_auth["HTTP_AUTHORIZATION"]}
        path = payments_url(account.customer_id, account.id)

        def pay(amount: str) -> int:
            body = {"amount": amount, "reference": "Workers", "beneficiaryId": str(beneficiary.id)}
            return call(web.port, "POST", path, body, headers)[0]

        before = scrape(web.port)
        amounts = ["1.00"] * 12 + ["10000.00"] * 2 + ["25000.01"] * 3 + ["not money"] * 2
        # Four at once: a sync worker answers one request at a time, so the
        # requests are spread over the workers.
        with ThreadPoolExecutor(4) as pool:
            statuses = Counter(pool.map(pay, amounts))
            unmatched = Counter(pool.map(lambda n: call(web.port, "GET", f"/v1/nothing/{n}")[0], range(3)))
        assert statuses == {200: 14, 422: 3, 400: 2}
        assert unmatched == {404: 3}

        # Whichever worker answers the scrape, the counts are the whole service's.
        for after in [scrape(web.port) for _ in range(8)]:
            assert {
                outcome: rise(before, after, "bankapi_payments_total", outcome=outcome)
                for outcome in ("accepted", "held", "refused")
            } == {"accepted": 12, "held": 2, "refused": 3}
            assert {
                status: rise(
                    before,
                    after,
                    "bankapi_http_requests_total",
                    method="POST",
                    route=PAYMENTS_ROUTE,
                    status=status,
                )
                for status in ("200", "400", "422")
            } == {"200": 14, "400": 2, "422": 3}
            assert (
                rise(
                    before,
                    after,
                    "bankapi_http_requests_total",
                    method="GET",
                    route="unmatched",
                    status="404",
                )
                == 3
            )
            assert (
                rise(
                    before,
                    after,
                    "bankapi_http_request_duration_seconds_count",
                    method="POST",
                    route=PAYMENTS_ROUTE,
                )
                == 19
            )
        writers = {
            int(name.split("_")[-1].removesuffix(".db"))
            for name in os.listdir(directory)
            if name.startswith("counter_")
        }
        assert len(writers & set(web.workers())) >= 2, "the requests should have reached several workers"
        assert GONE not in writers
    finally:
        web.stop()
    # One access line per request, in the combined log format, next to the service's own lines.
    lines = (tmp_path / "gunicorn.log").read_text().splitlines()
    access = re.compile(
        r'127\.0\.0\.1 - - \[[^]]+\] "POST ' + re.escape(path) + r' HTTP/1\.1" (\d{3}) \d+ "-" "-"\Z'
    )
    assert Counter(match[1] for match in map(access.match, lines) if match) == {"200": 14, "422": 3, "400": 2}


def _prometheus_query(port: int, query: str) -> list[dict]:
    status, body = call(port, "GET", "/api/v1/query?" + urlencode({"query": query}))
    assert status == 200, body
    return json.loads(body)["data"]["result"]


def _wait_for(predicate, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found is not None:
            return found
        time.sleep(0.5)
    raise AssertionError("timed out waiting for Prometheus")


@pytest.fixture
def prometheus(live_server, tmp_path):
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("the prometheus binary is not installed (CI installs Debian's package)")
    target = f"127.0.0.1:{urlsplit(live_server.url).port}"
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: bankapi\n    metrics_path: /metrics\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(  # noqa: S603
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(lambda: True if _ready(port) else None)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _ready(port: int) -> bool:
    try:
        return call(port, "GET", "/-/ready")[0] == 200
    except OSError:
        return False


def test_a_real_prometheus_scrapes_the_payments_made(
    live_server, account, beneficiary, customer_auth, prometheus
):
    service_port = urlsplit(live_server.url).port
    headers = {"Authorization": customer_auth["HTTP_AUTHORIZATION"]}
    query = 'sum(bankapi_payments_total{job="bankapi",outcome="accepted"})'

    def current() -> float | None:
        result = _prometheus_query(prometheus, query)
        return float(result[0]["value"][1]) if result else None

    before = _wait_for(current)
    for amount in ("1.00", "2.00", "3.00"):
        body = {"amount": amount, "reference": "Scraped", "beneficiaryId": str(beneficiary.id)}
        status, _ = call(service_port, "POST", payments_url(account.customer_id, account.id), body, headers)
        assert status == 200

    assert _wait_for(lambda: True if current() == before + 3 else None)
    up = _prometheus_query(prometheus, 'up{job="bankapi"}')
    assert [float(sample["value"][1]) for sample in up] == [1.0]
    routes = _prometheus_query(prometheus, 'count by (route) (bankapi_http_requests_total{method="POST"})')
    assert PAYMENTS_ROUTE in {sample["metric"]["route"] for sample in routes}


@requires_redis
def test_a_celery_workers_counts_reach_the_web_processes_scrape(
    transactional_db, account, beneficiary, customer_auth, tmp_path
):
    receiver, server = start_receiver()
    endpoint_create(
        program_id=account.program_id,
        sandbox=True,
        url=receiver.url,
        event_types=[EventType.PAYMENT_REQUEST_ACCEPTED],
    )
    directory = tmp_path / "prometheus"
    env = server_environment(PROMETHEUS_MULTIPROC_DIR=str(directory))
    # The worker starts first: gunicorn's start must not drop a live process's counts.
    worker = CeleryWorker(env, tmp_path / "celery.log")
    web = Gunicorn({**env, "CELERY_TASK_DEFAULT_QUEUE": worker.queue}, 2, tmp_path / "gunicorn.log")
    try:
        headers = {"Authorization": customer_auth["HTTP_AUTHORIZATION"]}
        before = scrape(web.port)
        for amount in ("1.00", "2.00", "3.00"):
            body = {"amount": amount, "reference": "Delivered", "beneficiaryId": str(beneficiary.id)}
            assert (
                call(web.port, "POST", payments_url(account.customer_id, account.id), body, headers)[0] == 200
            )

        # The worker delivers the three events and counts them; the web scrape sums its file.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            delivered = rise(
                before, scrape(web.port), "bankapi_webhook_deliveries_total", outcome="delivered"
            )
            if delivered >= 3:
                break
            time.sleep(0.5)
        assert delivered == 3
        assert len(receiver.accepted()) == 3
        assert (directory / f"counter_{worker.process.pid}.db").exists()
    finally:
        web.stop()
        worker.stop()
        server.shutdown()
        server.server_close()
