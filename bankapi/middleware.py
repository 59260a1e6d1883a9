import io
import re
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from bankapi.errors import ErrorCode
from bankapi.handlers import json_error

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIdMiddleware:
    """Give every request an id, echoed as `X-Request-Id` on every response.

    A caller's own id is kept when it is safe to log; otherwise a new one is made.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        sent = request.headers.get("X-Request-Id", "")
        request_id = sent if _SAFE_REQUEST_ID.match(sent) else str(uuid.uuid4())
        request.request_id = request_id  # type: ignore[attr-defined]  # read by the error handler
        response = self.get_response(request)
        response["X-Request-Id"] = request_id
        return response


def _takes_json(view_func: Callable[..., Any]) -> bool:
    """Whether every parser of the route reads JSON or XML (documents the API parses)."""
    view_class = getattr(view_func, "cls", None)
    parsers = getattr(view_class, "parser_classes", None) or []
    return bool(parsers) and all(
        "json" in getattr(parser, "media_type", "") or "xml" in getattr(parser, "media_type", "")
        for parser in parsers
    )


class JsonBodyLimitMiddleware:
    """Refuse an oversized body of a JSON (or XML) route at the door: 413 PAYLOAD_TOO_LARGE.

    Django would raise `RequestDataTooBig` only when the view reads the body, and
    the API's error handler would turn it into a 500. Here the limit
    (`DATA_UPLOAD_MAX_MEMORY_SIZE`) is applied before any parsing, signed in or not,
    to every route whose parsers are all JSON or XML (a route with its own upload
    rules, such as a document PUT, declares other parsers and keeps them).

    A chunked body comes without Content-Length, and Django would read it as
    empty. When the server has decoded it (`wsgi.input_terminated`, as gunicorn
    does) at most limit + 1 bytes are read here and handed on; when it has not
    (the development server), the request is refused rather than run on an
    empty body.
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
        if not _takes_json(view_func):
            return None
        # A route may take larger bodies (a batch of 10,000 payments): `max_body_bytes`.
        limit = getattr(
            getattr(view_func, "cls", None), "max_body_bytes", settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        )
        if limit is None:
            return None
        too_large = f"The body is over {limit} bytes."
        length = request.META.get("CONTENT_LENGTH")
        if length:
            try:
                size = int(length)
            except ValueError:
                return json_error(request, ErrorCode.VALIDATION_ERROR, "Content-Length must be an integer.")
            if size > limit:
                return json_error(request, ErrorCode.PAYLOAD_TOO_LARGE, too_large)
            return None
        if "chunked" not in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            return None
        if not request.META.get("wsgi.input_terminated"):
            return json_error(
                request, ErrorCode.VALIDATION_ERROR, "Send the body with a Content-Length header."
            )
        body = request.META["wsgi.input"].read(limit + 1)
        if len(body) > limit:
            return json_error(request, ErrorCode.PAYLOAD_TOO_LARGE, too_large)
        # Hand the decoded body on as if it had come with its length.
        request.META["CONTENT_LENGTH"] = str(len(body))
        request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
        return None
