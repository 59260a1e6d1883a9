"""Render every failure as the error envelope `{"success": false, "code", "message"}`.

Kept apart from `bankapi.errors` because it needs DRF's views module, which the
authentication classes (imported by DRF's settings) must not pull in.
"""

import logging
import sys
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from bankapi.errors import (
    ApiError,
    ErrorCode,
    flatten_validation_errors,
    not_found,
    service_unavailable,
    too_many_requests,
)
from bankapi.ops.outages import database_unavailable, outage_log

logger = logging.getLogger("bankapi.errors")

ResponseT = TypeVar("ResponseT", Response, JsonResponse)


def _from_drf(exc: drf_exceptions.APIException) -> ApiError:
    if isinstance(exc, drf_exceptions.ValidationError):
        errors = flatten_validation_errors(exc.detail)
        message = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5]) or "Invalid request"
        return ApiError(ErrorCode.VALIDATION_ERROR, message, errors=errors)
    if isinstance(exc, drf_exceptions.ParseError):
        return ApiError(
            ErrorCode.VALIDATION_ERROR,
            "Malformed JSON body",
            errors=[{"field": "body", "message": str(exc.detail)}],
        )
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return ApiError(
            ErrorCode.VALIDATION_ERROR,
            "Request bodies must be JSON (Content-Type: application/json)",
            errors=[{"field": "body", "message": str(exc.detail)}],
        )
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return ApiError(ErrorCode.UNAUTHORIZED, str(exc.detail))
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return ApiError(ErrorCode.FORBIDDEN, str(exc.detail))
    if isinstance(exc, drf_exceptions.NotFound):
        return ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Resource not found")
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return ApiError(ErrorCode.METHOD_NOT_ALLOWED, str(exc.detail))
    if isinstance(exc, drf_exceptions.NotAcceptable):
        return ApiError(ErrorCode.VALIDATION_ERROR, "Responses are only available as JSON")
    if isinstance(exc, drf_exceptions.Throttled):
        # The request budget of a token or client address (authn.throttling).
        return too_many_requests(
            "Request budget spent; retry after the Retry-After header's seconds",
            getattr(exc, "wait", None) or 1,
        )
    return ApiError(ErrorCode.INTERNAL_SERVER_ERROR, "Internal server error")


def _render(error: ApiError, request_id: str | None = None) -> Response:
    body = error.body()
    if error.status >= 500 and request_id:
        body["requestId"] = request_id
    response = Response(body, status=error.status)
    if error.status == 401:
        # RFC 9110: a 401 names the scheme the client should authenticate with.
        response["WWW-Authenticate"] = 'Bearer realm="bankapi"'
    for name, value in error.headers.items():
        response[name] = value
    return response


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    request = context.get("request")
    request_id = getattr(request, "request_id", None)
    set_rollback()
    if isinstance(exc, ApiError):
        return _render(exc, request_id)
    if isinstance(exc, Http404):
        return _render(not_found(), request_id)
    if isinstance(exc, DjangoPermissionDenied):
        return _render(ApiError(ErrorCode.FORBIDDEN, "Forbidden"), request_id)
    if isinstance(exc, drf_exceptions.APIException):
        return _render(_from_drf(exc), request_id)
    if database_unavailable(exc):
        return _unavailable(_render(service_unavailable(), request_id), exc)
    logger.exception("Unhandled error (request id %s)", request_id)
    return _render(ApiError(ErrorCode.INTERNAL_SERVER_ERROR, "Internal server error"), request_id)


def _unavailable(response: ResponseT, error: BaseException) -> ResponseT:
    """A 503 for the database being away: one outage line (rate-limited) instead of
    a traceback, and not Django's own error line per request either."""
    outage_log(logger, "database", "Database unavailable; answering 503", error=error)
    response._has_been_logged = True  # type: ignore[attr-defined]  # read by django.utils.log.log_response
    return response


def json_error(request: HttpRequest, code: ErrorCode, message: str) -> JsonResponse:
    return _json_error(request, ApiError(code, message))


def _json_error(request: HttpRequest, error: ApiError) -> JsonResponse:
    body = error.body()
    if error.status >= 500:
        body["requestId"] = getattr(request, "request_id", None)
    response = JsonResponse(body, status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


def handler404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return json_error(request, ErrorCode.RESOURCE_NOT_FOUND, "No such route")


def handler500(request: HttpRequest) -> JsonResponse:
    # Called inside Django's `except` around a middleware or a non-DRF view (the
    # admin): a database that cannot be reached is a 503 there too.
    error = sys.exc_info()[1]
    if error is not None and database_unavailable(error):
        return _unavailable(_json_error(request, service_unavailable()), error)
    return json_error(request, ErrorCode.INTERNAL_SERVER_ERROR, "Internal server error")


def handler400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return json_error(request, ErrorCode.VALIDATION_ERROR, "Bad request")


def handler403(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return json_error(request, ErrorCode.FORBIDDEN, "Forbidden")
