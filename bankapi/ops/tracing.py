"""OpenTelemetry traces: on only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

Then every request is a span (continuing a caller's W3C `traceparent`), with
spans for its SQL (psycopg), its Redis calls, the Celery tasks it queued (the
context travels in the task message) and the webhook POSTs those tasks make
(urllib3, whichever way the connection is opened). Everything else comes from
the standard variables: `OTEL_SERVICE_NAME` (default `bankapi`),
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_PYTHON_DJANGO_EXCLUDED_URLS`...

Unset, nothing of OpenTelemetry is even imported: no cost at all.
"""

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


def tracing_configured() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def _provider_from_environment() -> "TracerProvider":
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    os.environ.setdefault("OTEL_SERVICE_NAME", "bankapi")
    # Sampler, exporter endpoint, headers and timeouts: read from OTEL_* here.
    provider = TracerProvider(resource=Resource.create())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def _instrumentors() -> list[Any]:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.instrumentation.urllib3 import URLLib3Instrumentor

    # Singletons: each call answers the same instrumentor.
    kinds: list[Any] = [
        DjangoInstrumentor,
        PsycopgInstrumentor,
        CeleryInstrumentor,
        RedisInstrumentor,
        URLLib3Instrumentor,
    ]
    return [kind() for kind in kinds]


def tracing_start(provider: "TracerProvider | None" = None) -> None:
    """Instrument Django, psycopg, Celery, Redis and urllib3, exporting to
    `provider` (default: the one the OTEL_* variables describe).

    Runs while Django starts (the app's `ready`), before the request handler
    reads the middleware list, which the Django instrumentation extends.
    """
    provider = provider or _provider_from_environment()
    for instrumentor in _instrumentors():
        instrumentor.instrument(tracer_provider=provider)


def tracing_stop() -> None:
    """Undo `tracing_start` (tests)."""
    for instrumentor in _instrumentors():
        instrumentor.uninstrument()
