"""Traces: one trace from the caller's request through the Celery tasks it
queued to the webhook POST they made, continuing the caller's `traceparent`."""

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.db import connection
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from rest_framework.test import APIClient

from bankapi.ops.tracing import tracing_start, tracing_stop
from events.endpoints import endpoint_create
from tests.conftest import ON_POSTGRES
from tests.payments.conftest import payments_url
from tests.support.receiver import start_receiver


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing_start(provider)
    # In a process, instrumentation precedes the first connection; here the
    # test's connection is older: the next one opens through psycopg's wrapper
    # (with prepared statements on, from a pool made anew: the old one's
    # connections were opened before).
    fresh_connections()
    yield exporter
    tracing_stop()
    fresh_connections()


def fresh_connections() -> None:
    connection.close()
    if getattr(connection, "pool", None) is not None:
        connection.close_pool()
        # Its first connections opened now, by its own threads (their spans are
        # no request's), not while the test's request runs.
        connection.pool.open(wait=True)


@pytest.fixture
def receiver():
    receiver, server = start_receiver()
    yield receiver
    server.shutdown()
    server.server_close()


def test_a_payment_request_its_tasks_and_its_webhook_post_are_one_trace(
    transactional_db, account, beneficiary, customer_auth, receiver, spans
):
    # Given an endpoint subscribed to accepted payments, and a caller's trace.
    endpoint_create(
        program_id=account.program_id,
        sandbox=True,
        url=receiver.url,
        event_types=["payment_request.accepted"],
    )
    trace_id, parent_span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    spans.clear()

    # When the caller pays (commits are real here: the delivery runs after the
    # request's commit, in-process as on the embedded default).
    response = APIClient().post(
        payments_url(account.customer_id, account.id),
        {"amount": "3.00", "reference": "Traced", "beneficiaryId": str(beneficiary.id)},
        format="json",
        HTTP_TRACEPARENT=f"00-{trace_id}-{parent_span_id}-01",
        **customer_auth,
    )

    # Then the request, both tasks and the POST are spans of the caller's trace.
    assert response.status_code == 200, response.json()
    finished = spans.get_finished_spans()
    assert {format(span.context.trace_id, "032x") for span in finished} == {trace_id}
    server = [span for span in finished if span.kind == SpanKind.SERVER]
    assert len(server) == 1
    assert format(server[0].parent.span_id, "016x") == parent_span_id
    names = {span.name for span in finished}
    assert {"run/events.tasks.events_fan_out", "run/events.tasks.deliveries_drain"} <= names
    posts = [span for span in finished if span.kind == SpanKind.CLIENT and span.name == "POST"]
    assert len(posts) == 1
    # The receiver was told the trace too (it could continue it).
    assert len(receiver.received) == 1
    assert receiver.received[0].headers["traceparent"].split("-")[1] == trace_id
    if ON_POSTGRES:
        statements = [span for span in finished if span.attributes.get("db.system") == "postgresql"]
        assert statements, "no SQL spans"
        # The payment's one statement among them, however the connection binds it.
        texts = [str(span.attributes.get("db.statement", "")) for span in statements]
        assert any(text.startswith('WITH "debit"') for text in texts), texts


def _middleware_after_startup(**env: str) -> str:
    code = (
        "import django, sys; django.setup(); from django.conf import settings; "
        # The instrumentation, not the API: redis imports opentelemetry's API itself when installed.
        "print(any('opentelemetry' in m for m in settings.MIDDLEWARE), "
        "any(m.startswith('opentelemetry.instrumentation') for m in sys.modules))"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(DJANGO_SETTINGS_MODULE="config.settings", **env)
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_tracing_is_on_only_when_an_otlp_endpoint_is_configured():
    assert _middleware_after_startup() == "False False"
    assert _middleware_after_startup(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318") == "True True"
