"""Prometheus metrics, served at `GET /metrics` in Prometheus' text format.

Every series the service exports is declared here, so the list an operator
alerts on is in one place (docs/operations.md explains each). Domain apps count
through these objects; the kernel names no domain.

Processes: with `PROMETHEUS_MULTIPROC_DIR` set, every process (each gunicorn
worker, each Celery worker) writes its counts to files in that directory and a
scrape sums them, so any worker answers for all. Without it (the embedded
default: one process, tasks in-process) the counts live in memory.

Counting costs no SQL: values are kept in memory or in memory-mapped files. Only
the gauges computed at scrape (`scrape_gauge_register`) read the database, and
only when scraped; a scrape never waits on a database that is away (see
`_ScrapeGauges`). `bankapi_redis_up` asks Redis at scrape, within half a second.
"""

import hmac
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db import Error as DatabaseFailure
from django.db import connection, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from prometheus_client import (
    # The classic text format, which every Prometheus version reads.
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from bankapi.errors import ApiError, ErrorCode
from bankapi.http.schema import error_responses
from bankapi.ops.metrics_files import multiprocess_directory, multiprocess_directory_ensure
from bankapi.ops.outages import (
    database_backoff,
    database_unavailable,
    outage_log,
    redis_answers,
    redis_queue_lengths,
)

logger = logging.getLogger(__name__)

multiprocess_directory_ensure()

# `_created` timestamps double every counter's series for no alert anyone sets.
disable_created_metrics()  # type: ignore[no-untyped-call]

# In-process values are registered here (not in prometheus_client's default
# registry, which would add process and runtime series nobody asked for).
_REGISTRY = CollectorRegistry(auto_describe=True)

HTTP_REQUESTS = Counter(
    "bankapi_http_requests",
    "HTTP requests answered, by method, route pattern and numeric status.",
    ["method", "route", "status"],
    registry=_REGISTRY,
)
HTTP_REQUEST_DURATION = Histogram(
    "bankapi_http_request_duration_seconds",
    "Time from a request's arrival in the application to its answer, by method and route pattern.",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=_REGISTRY,
)
PAYMENTS = Counter(
    "bankapi_payments",
    "Payment creations through the API: accepted, held for compliance review, held for approval by other "
    "users (pending_approval: payments, schedules and batch submits), or refused (answered 422).",
    ["outcome"],
    registry=_REGISTRY,
)
BATCH_ITEMS = Counter(
    "bankapi_batch_items",
    "Batch items by final outcome: success (paid) or failed.",
    ["outcome"],
    registry=_REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "bankapi_webhook_deliveries",
    "Webhook delivery attempts: delivered (a 2xx answer) or failed (anything else, a timeout included).",
    ["outcome"],
    registry=_REGISTRY,
)
TASK_PUBLISH_FAILURES = Counter(
    "bankapi_task_publish_failures",
    "Celery tasks not queued (the broker, Redis, could not be reached); the sweeps run their work later.",
    registry=_REGISTRY,
)
# Every outcome is exported from the start (at 0), so that a rate over it exists
# before the first event of its kind.
for _counter, _outcomes in (
    (PAYMENTS, ("accepted", "held", "pending_approval", "refused")),
    (BATCH_ITEMS, ("success", "failed")),
    (WEBHOOK_DELIVERIES, ("delivered", "failed")),
):
    for _outcome in _outcomes:
        _counter.labels(outcome=_outcome)

UNMATCHED_ROUTE = "unmatched"
_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
_PATH_PARAMETER = re.compile(r"<(?:[^>:]+:)?([^>]+)>")
_REGEX_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def route_label(request: HttpRequest) -> str:
    """The URL pattern that answered, `/v1/customers/{customerId}/accounts`: never
    a raw path, so the label's values are as few as the routes."""
    match = getattr(request, "resolver_match", None)
    if match is None or not match.route:
        return UNMATCHED_ROUTE
    label = _route_labels.get(match.route)
    if label is None:
        route = _PATH_PARAMETER.sub(lambda found: "{" + found.group(1) + "}", match.route)
        route = _REGEX_GROUP.sub(lambda found: "{" + found.group(1) + "}", route)
        # As many as the URL patterns: written once each.
        label = _route_labels[match.route] = "/" + route.replace("^", "").replace("$", "")
    return label


_route_labels: dict[str, str] = {}


class HttpMetricsMiddleware:
    """Counts and times every answer. First in the middleware list, so the time
    covers the whole application and every answer is counted, refusals included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in _METHODS else "other"
        route = route_label(request)
        HTTP_REQUESTS.labels(method=method, route=route, status=str(response.status_code)).inc()
        HTTP_REQUEST_DURATION.labels(method=method, route=route).observe(time.perf_counter() - started)
        return response


# Each gauge's documentation, its label (None: a single series) and its reader.
_scrape_gauges: dict[str, tuple[str, str | None, Callable[[], Any]]] = {}


def scrape_gauge_register(
    name: str, documentation: str, compute: Callable[[], Any], *, label: str | None = None
) -> None:
    """A gauge whose value `compute` reads when scraped (from the database, say):
    right whichever process answers, and costing nothing between scrapes. With
    `label`, `compute` answers a series per value of that label
    (`{label value: value}`); label values are names, never ids."""
    if name in _scrape_gauges and _scrape_gauges[name][2] is not compute:
        raise ValueError(f"A scrape gauge named {name} is registered already")
    _scrape_gauges[name] = (documentation, label, compute)


def _gauge_family(name: str, documentation: str, label: str | None, value: Any) -> GaugeMetricFamily:
    if label is None:
        return GaugeMetricFamily(name, documentation, value=value)
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for label_value, series_value in sorted(value.items()):
        family.add_metric([label_value], series_value)
    return family


# A scrape's database reads are cut off after this long (PostgreSQL's statement
# timeout); the database away, they are skipped for a while (`database_backoff`):
# a scrape answers at once with what needs no database.
SCRAPE_STATEMENT_TIMEOUT_MS = 2000


class _ScrapeGauges(Collector):
    """The gauges read from the database at scrape, in one transaction whose
    statements PostgreSQL cuts off after `SCRAPE_STATEMENT_TIMEOUT_MS`. When the
    database does not answer they are left out of the scrape (alert on `absent()`
    if need be), one warning line per outage, and after an outage not asked
    again for `DATABASE_BACKOFF_SECONDS`: the counters still answer at once."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if not _scrape_gauges or not database_backoff.open():
            return
        values: list[tuple[str, str, str | None, Any]] = []
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        # LOCAL: ends with the transaction (safe behind PgBouncer).
                        cursor.execute(f"SET LOCAL statement_timeout = {SCRAPE_STATEMENT_TIMEOUT_MS}")
                for name, (documentation, label, compute) in sorted(_scrape_gauges.items()):
                    values.append((name, documentation, label, compute()))
        except DatabaseFailure as error:
            if database_unavailable(error):
                database_backoff.failed()
            outage_log(logger, "metrics", "Database gauges left out of /metrics", error=error)
            return
        database_backoff.answered()
        for name, documentation, label, value in values:
            yield _gauge_family(name, documentation, label, value)

    def describe(self) -> list:
        return []


class _RedisUp(Collector):
    """`bankapi_redis_up`: 1 when Redis (the broker and the request budgets' store)
    answered a PING within half a second at this scrape, else 0; absent where no
    Redis is configured."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if not settings.REDIS_URL:
            return
        yield GaugeMetricFamily(
            "bankapi_redis_up",
            "1 when Redis answered at this scrape, else 0 (queued work then waits for the sweeps).",
            value=1.0 if redis_answers(timeout=0.5) else 0.0,
        )

    def describe(self) -> list:
        return []


def celery_queues() -> list[str]:
    """The queues the service's tasks are sent to: the default one and those its
    task routes name (`config.celery.QUEUE_SETTING_OF_TASKS`)."""
    from config.celery import QUEUE_SETTING_OF_TASKS, app

    routed = {app.conf[setting] for setting in QUEUE_SETTING_OF_TASKS.values()}
    return sorted({app.conf.task_default_queue, *routed})


class _QueueLengths(Collector):
    """`bankapi_celery_queue_length{queue}`: the messages waiting in each queue
    (with Redis: the length of its lists, every priority of it), read at
    scrape. Without a broker (the embedded default) nothing can wait: 0 each.
    Left out when Redis does not answer (`bankapi_redis_up` says so)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lengths = dict.fromkeys(celery_queues(), 0)
        if settings.REDIS_URL:
            try:
                lengths = redis_queue_lengths(list(lengths), timeout=0.5)
            except OSError as error:
                outage_log(logger, "metrics-queues", "Queue lengths left out of /metrics", error=error)
                return
        family = GaugeMetricFamily(
            "bankapi_celery_queue_length",
            "Tasks waiting in each Celery queue for a worker (growing: workers are behind).",
            labels=["queue"],
        )
        for queue, length in sorted(lengths.items()):
            family.add_metric([queue], length)
        yield family

    def describe(self) -> list:
        return []


def metrics_text() -> bytes:
    """Every series, in Prometheus' text format."""
    if multiprocess_directory():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(_REGISTRY)
    gauges = CollectorRegistry()
    gauges.register(_ScrapeGauges())
    gauges.register(_RedisUp())
    gauges.register(_QueueLengths())
    return body + generate_latest(gauges)


def _scrape_allowed(request: HttpRequest) -> bool:
    """Open on a development run; in a deployment only with the metrics bearer,
    and not at all (404, as if the route did not exist) while none is set."""
    if not settings.METRICS_REQUIRE_TOKEN:
        return True
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404
    sent = request.headers.get("Authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


class _AnyAccept(BaseContentNegotiation):
    """Scrapers send various Accept headers: the text format (or a JSON error) is
    answered whatever they say, never 406."""

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return next(iter(parsers), None)

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


class MetricsView(APIView):
    # Not a user's token: the scrape bearer is METRICS_TOKEN, checked below.
    authentication_classes: list = []
    permission_classes = [AllowAny]
    # Scraped every few seconds from one address: no request budget, as the probes.
    throttle_classes: list = []
    content_negotiation_class = _AnyAccept

    @extend_schema(
        tags=["service"],
        summary="Prometheus metrics",
        description=(
            "Counters and histograms of requests, payments, batch items and webhook "
            "deliveries, and the age of the oldest undelivered event, in Prometheus' "
            "text format. In a deployment it takes `Authorization: Bearer <METRICS_TOKEN>` "
            "(the operator's scrape token, not a user's token) and answers 404 while no "
            "METRICS_TOKEN is configured."
        ),
        auth=[],
        responses={
            (200, CONTENT_TYPE_PLAIN_0_0_4): OpenApiResponse(OpenApiTypes.STR, description="The metrics."),
            **error_responses(
                401, 404, s401="UNAUTHORIZED: not the metrics bearer.", s404="No METRICS_TOKEN is configured."
            ),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        if not _scrape_allowed(request):
            raise ApiError(
                ErrorCode.UNAUTHORIZED,
                "Send the metrics token as 'Authorization: Bearer <token>'.",
                headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
            )
        return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
