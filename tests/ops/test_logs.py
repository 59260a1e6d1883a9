"""Log lines: the request id on every line of a request and of the tasks it
queued, the tenant ids once the token is verified, JSON in a deployment, and
secrets scrubbed whatever the code logs."""

import json
import logging
import re
import subprocess
import time

import pytest
from rest_framework.test import APIClient

from bankapi.models import Account
from bankapi.ops.logs import redact
from events.models import Event
from payments.models import Beneficiary
from tests.batches.conftest import payment as batch_payment
from tests.conftest import requires_redis
from tests.events.test_webhooks import subscribe
from tests.kernel.test_settings import production_variables, run_check, run_operator_process
from tests.payments.conftest import payments_url
from tests.support.receiver import start_receiver
from tests.support.worker import celery_workers


def pay(api, account: Account, beneficiary: Beneficiary, auth, **extra):
    return api.post(
        payments_url(account.customer_id, account.id),
        {"amount": "1.50", "reference": "Logs", "beneficiaryId": str(beneficiary.id)},
        format="json",
        **auth,
        **extra,
    )


def test_every_line_of_a_request_carries_its_id_and_the_callers_tenant(
    api, account, beneficiary, customer_auth, console
):
    console.as_json()

    response = pay(api, account, beneficiary, customer_auth, HTTP_X_REQUEST_ID="req-logs-1")

    assert response.status_code == 200
    lines = [json.loads(line) for line in console.lines()]
    assert len(lines) > 5  # the request's SQL at least
    assert {line["request_id"] for line in lines} == {"req-logs-1"}
    assert all({"timestamp", "level", "logger", "message", "request_id"} <= set(line) for line in lines)
    # Once the token is verified, the program, customer and user it acts for.
    user_id = response.wsgi_request.user.id
    tenant = [line for line in lines if "user_id" in line]
    assert tenant and tenant[-1] == {
        **tenant[-1],
        "program_id": str(account.program_id),
        "customer_id": str(account.customer_id),
        "user_id": str(user_id),
    }


def test_the_warning_django_writes_after_a_refused_request_carries_its_id(api, db, console):
    console.as_json()

    response = api.get("/v1/no/such/route", HTTP_X_REQUEST_ID="bad id\n")

    assert response.status_code == 404
    made = response["X-Request-Id"]
    assert made != "bad id\n"
    warnings = [json.loads(line) for line in console.lines()]
    assert [(line["logger"], line["request_id"]) for line in warnings] == [("django.request", made)]


def test_a_task_run_in_process_logs_the_request_that_queued_it(
    transactional_db, account, beneficiary, customer_auth, console
):
    # Commits are real: the event's fan-out task runs after the request's commit,
    # in-process, as on the embedded default.
    response = pay(APIClient(), account, beneficiary, customer_auth, HTTP_X_REQUEST_ID="req-eager-1")

    assert response.status_code == 200
    task_lines = [line for line in console.lines() if "events.tasks.events_fan_out" in line]
    assert task_lines and all("[req-eager-1]" in line for line in task_lines)


@requires_redis
def test_a_worker_logs_the_id_of_the_request_that_queued_its_task_or_wrote_its_event(
    transactional_db, account, beneficiary, customer_auth, tmp_path
):
    # A batch to verify is queued by the request that sent it: the worker's line
    # for that task carries the request's id and the caller's tenant. A payment
    # queues nothing from the request (the worker's outbox relay finds its event),
    # yet the fan-out and the delivery of its webhook log the id of the request
    # that made the payment: the event keeps it.
    receiver, server = start_receiver()
    subscribe(account, receiver.url)
    output = (tmp_path / "worker.log").open("w+")

    def worker_lines() -> list[dict]:
        return [
            json.loads(line)
            for line in (tmp_path / "worker.log").read_text().splitlines()
            if line.startswith("{")
        ]

    try:
        with celery_workers("logs", env={"LOG_FORMAT": "json", "LOG_LEVEL": "INFO"}) as workers:
            workers.start(output)
            response = APIClient().post(
                f"/v1/customers/{account.customer_id}/batch-payments",
                {"action": "verify", "payments": [batch_payment(account, "1.50", "Logs")]},
                format="json",
                HTTP_X_REQUEST_ID="req-worker-1",
                **customer_auth,
            )
            assert response.status_code in (200, 202), response.json()
            paid = pay(APIClient(), account, beneficiary, customer_auth, HTTP_X_REQUEST_ID="req-worker-2")
            assert paid.status_code == 200, paid.json()
            event = Event.objects.get(resource_id=paid.json()["data"]["bankTransfer"]["requestId"])
            deadline = time.monotonic() + 60
            done: list[dict] = []
            delivered: list[dict] = []
            drained: list[dict] = []
            while not (done and delivered and drained) and time.monotonic() < deadline:
                time.sleep(0.3)
                lines = worker_lines()
                done = [
                    line
                    for line in lines
                    if "batches.tasks.verify_draft" in line["message"] and "succeeded" in line["message"]
                ]
                delivered = [
                    line
                    for line in lines
                    if f"of event {event.event_id} " in line["message"] and "delivered" in line["message"]
                ]
                drained = [line for line in lines if "webhook drain: 1 delivered" in line["message"]]
    finally:
        server.shutdown()
    assert done and delivered and drained, (tmp_path / "worker.log").read_text()[-3000:]
    assert done[0]["request_id"] == "req-worker-1"
    assert done[0]["customer_id"] == str(account.customer_id)
    about_the_payment = [line for line in worker_lines() if str(event.event_id) in line["message"]]
    # Its fan-out, its delivery attempt, and nothing else mentions it.
    assert [line["logger"] for line in about_the_payment] == ["events.delivery", "events.drain"]
    assert {line["request_id"] for line in about_the_payment} == {"req-worker-2"}
    # The endpoint's drain sends the events of many requests: its own line names none.
    assert [line["request_id"] for line in drained] == [None]
    assert b"req-worker-2" not in receiver.received[0].body


REDACTED = [
    ("an access token", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlLXZhbHVl", "token {}"),
    ("a bearer header", "Bearer opaque-refresh-abcdef123456", "Authorization: {}"),
    ("a webhook secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "created {}"),
    ("a password in JSON", '"password": "correct horse battery"', "body {{{}}}"),
    ("a TOTP code", '"totp_code": "492039"', "body {{{}}}"),
    ("a step-up code", "'code': '492039'", "body {{{}}}"),
    ("a PIN", "pin=4821", "form {}&x=1"),
    ("a CVV", '"cvv": "737"', "card {{{}}}"),
    ("a PAN", "4111111111111111", "card {}"),
    ("a grouped PAN", "5555 5555 5555 4444", "card {} on file"),
    ("a URL signature", "signature=Zm9vYmFyYmF6cXV4", "PUT /v1/documents/local?key=k&expires=1&{} HTTP/1.1"),
    ("an S3 signature", "X-Amz-Signature=4c1e9a3b6a3c2f9d0b11", "GET https://b.s3/k?X-Amz-Date=1&{}"),
    ("a refresh token field", "refresh_token='rt_5d8a0c0e7f6b'", "kwargs {}"),
]


@pytest.mark.parametrize(("what", "secret", "line"), REDACTED, ids=[case[0] for case in REDACTED])
def test_redaction_removes_each_kind_of_secret(what, secret, line):
    value = re.split(r"[=:] ?|\s", secret)[-1].strip("\"'")
    assert value in line.format(secret)

    assert value not in redact(line.format(secret))


KEPT = [
    '{"sortCode": "040004", "accountNumber": "12345678"}',
    "Batch 6a198a14-9648-4fcd-8d5f-b86dcc2a8159 funding: FUNDED",
    "amount 1234.56 at 2026-11-25T17:41:45.425+00:00 (0.003) iban DE89370400440532013000",
    "Task events.tasks.deliveries_drain[80501763-12b0-4dd3-b26e-26891faf25d2] succeeded in 0.05s: 1",
]


@pytest.mark.parametrize("line", KEPT)
def test_redaction_keeps_what_is_not_a_secret(line):
    assert redact(line) == line


def test_a_secret_logged_by_mistake_never_reaches_the_output(console):
    logging.getLogger("bankapi.mistake").warning(
        "signing in %s with %s",
        "ann@example.com",
        {"password": "hunter2-but-longer", "pan": "4111111111111111"},
    )
    try:
        raise ValueError("token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln")
    except ValueError:
        logging.getLogger("bankapi.mistake").exception("failed")

    written = console.text()
    assert "ann@example.com" in written and "failed" in written
    for secret in ("hunter2-but-longer", "4111111111111111", "eyJhbGciOiJSUzI1NiJ9"):
        assert secret not in written


def _log_a_line(env: dict[str, str]) -> subprocess.CompletedProcess:
    """A line logged by a service process (gunicorn and Celery set Django up so)."""
    code = (
        "import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); "
        "django.setup(); "
        "import logging; logging.getLogger('bankapi.check').warning('hello %s', 'operator')"
    )
    return run_operator_process({"LOG_FORMAT": "", **env}, "-c", code)


def _log_a_line_in_a_command(env: dict[str, str]) -> subprocess.CompletedProcess:
    code = "import logging; logging.getLogger('bankapi.check').warning('hello %s', 'operator')"
    return run_check({"LOG_FORMAT": "", **env}, "-c", code, command="shell")


def test_a_deployment_logs_json_lines_on_stdout(tmp_path):
    result = _log_a_line(production_variables(tmp_path))

    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["level"] == "WARNING" and line["logger"] == "bankapi.check"
    assert line["message"] == "hello operator" and line["request_id"] is None
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$", line["timestamp"])


def test_the_embedded_default_logs_readable_lines_and_log_format_overrides(tmp_path):
    """Readable lines go to stderr; JSON lines to stdout."""
    embedded = _log_a_line({"BANKAPI_VAR_DIR": str(tmp_path / "var")})
    deployment_as_text = _log_a_line({**production_variables(tmp_path), "LOG_FORMAT": "text"})
    embedded_as_json = _log_a_line({"BANKAPI_VAR_DIR": str(tmp_path / "var"), "LOG_FORMAT": "json"})
    unknown = _log_a_line({"BANKAPI_VAR_DIR": str(tmp_path / "var"), "LOG_FORMAT": "xml"})

    for readable in (embedded, deployment_as_text):
        assert readable.returncode == 0, readable.stderr
        # Readable lines on stderr, whatever the process.
        assert re.search(r"WARNING bankapi\.check \[-\] hello operator$", readable.stderr.strip())
        assert "hello operator" not in readable.stdout
    assert json.loads(embedded_as_json.stdout.strip().splitlines()[-1])["message"] == "hello operator"
    assert unknown.returncode != 0 and "LOG_FORMAT must be json or text" in unknown.stderr


def test_a_management_command_logs_to_stderr_in_either_format(tmp_path):
    """A command's stdout is its answer: its JSON log lines go to stderr."""
    as_json = _log_a_line_in_a_command(production_variables(tmp_path))
    as_text = _log_a_line_in_a_command({"BANKAPI_VAR_DIR": str(tmp_path / "var")})

    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stderr.strip().splitlines()[-1])["message"] == "hello operator"
    assert re.search(r"WARNING bankapi\.check \[-\] hello operator$", as_text.stderr.strip())
    assert "hello operator" not in as_json.stdout + as_text.stdout
