"""One error model for the whole API: every failure is a code, a message and a status.

Services raise `ApiError(ErrorCode.X, message, **extra)`; `bankapi.http.handlers`
renders every failure, ours or the framework's, as the error envelope
`{"success": false, "code": ..., "message": ...}` and rolls back the request's
open atomic blocks.

`ErrorCode` holds the codes any route may answer. A domain's own codes are its
own: it defines them as a `DomainErrorCode` and registers them with their
statuses when its app is ready (`error_codes_register`), as it registers its
dashboard figures; the OpenAPI document lists every registered code.
"""

import enum
import math
from collections.abc import Mapping
from typing import Any


class ErrorCode(enum.StrEnum):
    # The codes any route may answer; a code only one domain answers is that
    # domain's (`DomainErrorCode`), registered when its app is ready.
    VALIDATION_ERROR = "VALIDATION_ERROR"
    IDEMPOTENCY_KEY_MISMATCH = "IDEMPOTENCY_KEY_MISMATCH"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    RESOURCE_NOT_FOUND = "RESOURCE_NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    IDEMPOTENCY_KEY_IN_PROGRESS = "IDEMPOTENCY_KEY_IN_PROGRESS"
    INVALID_STATE = "INVALID_STATE"
    LENGTH_REQUIRED = "LENGTH_REQUIRED"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    UNSUPPORTED_PARAMETER = "UNSUPPORTED_PARAMETER"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    TOO_MANY_REQUESTS = "TOO_MANY_REQUESTS"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    INTERNAL_SERVER_ERROR = "INTERNAL_SERVER_ERROR"


class DomainErrorCode(enum.StrEnum):
    """The base of a domain app's own codes (`payments.errors.PaymentErrorCode`,
    ...), registered with their statuses by `error_codes_register`."""


Code = ErrorCode | DomainErrorCode

# Every code's HTTP status: the kernel's, then each domain's as it registers them.
HTTP_STATUS: dict[str, int] = {
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.IDEMPOTENCY_KEY_MISMATCH: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.RESOURCE_NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.IDEMPOTENCY_KEY_IN_PROGRESS: 409,
    ErrorCode.INVALID_STATE: 409,
    ErrorCode.LENGTH_REQUIRED: 411,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.UNSUPPORTED_PARAMETER: 422,
    ErrorCode.NOT_SUPPORTED: 422,
    ErrorCode.TOO_MANY_REQUESTS: 429,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.INTERNAL_SERVER_ERROR: 500,
}


def error_codes_register(statuses: Mapping[DomainErrorCode, int]) -> None:
    """Register a domain's codes with their HTTP statuses. A code is one code
    everywhere: registering a name again with another status is an error."""
    for code, status in statuses.items():
        if HTTP_STATUS.get(code, status) != status:
            raise ValueError(f"Error code {code} is already registered with status {HTTP_STATUS[code]}")
        HTTP_STATUS[code] = status


def error_codes() -> list[str]:
    """Every code the API may answer, the kernel's and the registered ones, in
    alphabetical order (whatever order the apps registered theirs in)."""
    return sorted(HTTP_STATUS)


class ApiError(Exception):
    """A failure the caller should see, with its code, message and extra fields.

    `extra` is merged into the body (e.g. `retryable`, `errors`); `headers` are
    added to the response (e.g. `Retry-After`).
    """

    def __init__(
        self,
        code: Code,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = HTTP_STATUS[code]
        self.extra = extra
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"success": False, "code": str(self.code), "message": self.message, **self.extra}


def validation_error(field: str, message: str) -> ApiError:
    return ApiError(ErrorCode.VALIDATION_ERROR, message, errors=[{"field": field, "message": message}])


def not_found(what: str = "Resource") -> ApiError:
    return ApiError(ErrorCode.RESOURCE_NOT_FOUND, f"{what} not found")


def too_many_requests(message: str, retry_after_seconds: float) -> ApiError:
    seconds = max(1, math.ceil(retry_after_seconds))
    return ApiError(
        ErrorCode.TOO_MANY_REQUESTS,
        message,
        headers={"Retry-After": str(seconds)},
        retryable=True,
    )


def service_unavailable() -> ApiError:
    """The database cannot be reached: nothing is wrong with the request, retry soon."""
    from bankapi.ops.outages import DATABASE_RETRY_AFTER_SECONDS

    return ApiError(
        ErrorCode.SERVICE_UNAVAILABLE,
        "The service cannot reach its database; retry after the Retry-After header's seconds",
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        retryable=True,
    )


def flatten_validation_errors(detail: Any, prefix: str = "") -> list[dict[str, str]]:
    """Turn DRF's nested error detail into `[{field, message}]` with dotted paths."""
    if isinstance(detail, dict):
        errors = []
        for key, value in detail.items():
            if key in ("non_field_errors", "__all__"):
                path = prefix or "body"
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            errors.extend(flatten_validation_errors(value, path))
        return errors
    if isinstance(detail, list):
        errors = []
        for index, item in enumerate(detail):
            if isinstance(item, (dict, list)):
                path = f"{prefix}.{index}" if prefix else str(index)
                errors.extend(flatten_validation_errors(item, path))
            else:
                errors.append({"field": prefix or "body", "message": str(item)})
        return errors
    return [{"field": prefix or "body", "message": str(detail)}]
