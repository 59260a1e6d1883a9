import io
import re
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.urls import resolve
from whitenoise.middleware import WhiteNoiseMiddleware  # type: ignore[import-untyped]

from bankapi.errors import ErrorCode
from bankapi.http.handlers import json_error
from bankapi.ops.logs import REQUEST_ID_MAX_LENGTH, log_context_start

_SAFE_REQUEST_ID = re.compile(rf"^[A-Za-z0-9._:-]{{1,{REQUEST_ID_MAX_LENGTH}}}$")


class RequestIdMiddleware:
    """Give every request an id, echoed as `X-Request-Id` on every response.

    A caller's own id is kept when it is safe to log; otherwise a new one is made.
    Every log line written while the request runs carries it (`bankapi.ops.logs`).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        sent = request.headers.get("X-Request-Id", "")
        request_id = sent if _SAFE_REQUEST_ID.fullmatch(sent) else str(uuid.uuid4())
        request.request_id = request_id  # type: ignore[attr-defined]  # read by the error handler
        log_context_start(request_id=request_id)
        response = self.get_response(request)
        response["X-Request-Id"] = request_id
        return response


# The routes a load balancer probes and Prometheus scrapes, each node by its own
# address: whatever Host header that gives, they answer.
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class ProbeMiddleware:
    """Answer the probes and the scrape before the Host header is checked.

    `ALLOWED_HOSTS` names the service's public name; a load balancer or
    Prometheus reaching a node by its address (`10.0.0.7:8000`) sends that
    address as Host, and Django's host check (`CommonMiddleware`, among others)
    would answer 400. These three routes take no session, cookie or body and
    link to nothing, so the Host can do them no harm: they are answered here,
    before the middleware that checks it, and every other route still is
    checked. Placed after the request id and the request counter, so a probe
    still carries its id and is counted under its route.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path_info not in PROBE_PATHS or _carries_a_body(request):
            # A probe sends no body: one that does takes the ordinary way, with
            # its body's limit (413) and the host check.
            return self.get_response(request)
        match = resolve(request.path_info)
        request.resolver_match = match
        response: HttpResponseBase = match.func(request, *match.args, **match.kwargs)
        render = getattr(response, "render", None)
        if callable(render):
            response = render()
        return response


def _carries_a_body(request: HttpRequest) -> bool:
    length = request.META.get("CONTENT_LENGTH") or "0"
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    return chunked or length.strip() != "0"


def _view_class(view_func: Callable[..., Any]) -> type | None:
    """The DRF view class behind `view_func`, or None (Django admin, plain views)."""
    view_class = getattr(view_func, "cls", None)
    return view_class if getattr(view_class, "parser_classes", None) else None


def body_limit(view_class: type) -> int | None:
    """The largest body the route takes, in bytes (None: the route reads no body
    at the door and keeps its own rules).

    A route states it with `max_body_bytes` (a batch of 10,000 payments, a
    document upload); otherwise `DATA_UPLOAD_MAX_MEMORY_SIZE`, whatever its parsers.
    """
    limit: int | None = getattr(view_class, "max_body_bytes", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    return limit


class BodyLimitMiddleware:
    """Every API route refuses an oversized body at the door: 413 PAYLOAD_TOO_LARGE.

    Django would raise `RequestDataTooBig` only when the view reads the body, and
    the API's error handler would turn it into a 500. Here the route's limit
    (`body_limit`) is applied before any parsing, signed in or not, to every DRF
    route, JSON or not (a document PUT, a form, a file).

    A chunked body comes without Content-Length, and Django would read it as
    empty: a view would act on nothing, or store nothing, and answer 200. When
    the server has decoded it (`wsgi.input_terminated`, as gunicorn does) at most
    limit + 1 bytes are read here, counted as they come, and handed on as if the
    body had come with its length; when it has not (the development server), the
    request is refused with 411 LENGTH_REQUIRED rather than run on an empty body.

    A body within the route's limit but over Django's own in-memory limit
    (`DATA_UPLOAD_MAX_MEMORY_SIZE`, which Django applies when the body is read)
    is read here and handed on read, so that it is answered, not refused by
    Django as too large after the route has taken it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        view_class = _view_class(view_func)
        if view_class is None:
            return None
        limit = body_limit(view_class)
        if limit is None:
            return None
        too_large = f"The body is over {limit} bytes."
        length = request.META.get("CONTENT_LENGTH")
        if length:
            if not length.isascii() or not length.isdigit():
                return json_error(request, ErrorCode.VALIDATION_ERROR, "Content-Length must be an integer.")
            if int(length) > limit:
                return json_error(request, ErrorCode.PAYLOAD_TOO_LARGE, too_large)
            if _over_djangos_limit(int(length)):
                _hand_on(request, _read_at_most(request._stream, int(length)))
            return None
        if "chunked" not in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            return None
        if not request.META.get("wsgi.input_terminated"):
            return json_error(
                request,
                ErrorCode.LENGTH_REQUIRED,
                "This server cannot read a chunked body: send it with a Content-Length header.",
            )
        body = _read_at_most(request.META["wsgi.input"], limit + 1)
        if len(body) > limit:
            return json_error(request, ErrorCode.PAYLOAD_TOO_LARGE, too_large)
        _hand_on(request, body)
        return None


def _over_djangos_limit(length: int) -> bool:
    """Whether Django itself would refuse to read a body of this length
    (`RequestDataTooBig`, which the API's error handler answers as a 500): a
    route may take more than Django's in-memory limit (a batch of 10,000
    payments), and DRF reads a JSON or form body through Django's."""
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE is not None and length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def _hand_on(request: HttpRequest, body: bytes) -> None:
    """Hand on a body read here (within the route's limit) as if it had come
    with its length, and as Django keeps a body it has read itself: every later
    reader (`request.body`, DRF's parsers, a view reading the stream) gets it
    whole, and none meets Django's own limit again."""
    request.META["CONTENT_LENGTH"] = str(len(body))
    request._body = body
    request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]


def _read_at_most(stream: Any, size: int) -> bytes:
    """Up to `size` bytes of `stream`, however few each read returns (a decoded
    chunked stream may return one chunk at a time)."""
    pieces: list[bytes] = []
    remaining = size
    while remaining > 0:
        piece = stream.read(min(remaining, 64 * 1024))
        if not piece:
            break
        pieces.append(piece)
        remaining -= len(piece)
    return b"".join(pieces)


# Every route of the API is under this prefix (the OpenAPI document's, Swagger UI's included).
API_PATH_PREFIX = "/v1/"


def is_api_request(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PATH_PREFIX)


class _OffTheApi:
    """A middleware that runs on every route but the API's.

    The API authenticates each request by its bearer token: it reads no session,
    sets no cookie, shows no flash message and serves no static file. What only
    the back office and its pages need is then not done on every API request (a
    payment's Python is a couple of milliseconds, and these cost a tenth of
    it). Each is still a subclass of Django's, where the admin's checks look
    for it. (Django's CSRF middleware stays on every route, as Django's
    deployment check asks: the API's views are exempt from it, which it
    checks first.)"""

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        this: Any = self  # the middleware this is mixed into keeps `get_response`
        response: HttpResponseBase = (
            this.get_response(request) if is_api_request(request) else super().__call__(request)  # type: ignore[misc]
        )
        return response


class StaticFilesMiddleware(_OffTheApi, WhiteNoiseMiddleware):  # type: ignore[misc]  # untyped
    """WhiteNoise, for the back office's static files."""


class SessionMiddleware(_OffTheApi, DjangoSessionMiddleware):
    """Django's sessions, for the back office."""


class AuthenticationMiddleware(_OffTheApi, DjangoAuthenticationMiddleware):
    """The session's user, for the back office (the API's caller is its token's)."""


class MessageMiddleware(_OffTheApi, DjangoMessageMiddleware):
    """Django's flash messages, for the back office."""
