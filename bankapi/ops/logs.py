"""Log lines: who and which request each one is about, and never a secret.

Every line carries the request id (the `X-Request-Id` of the answer) and, once a
token is verified, the program, customer and user it acts for. They live in a
context variable: bound by the request middleware and the bearer authentication,
carried into Celery tasks in the task message's headers, and read by a logging
filter, so no call site passes them.

Redaction is a safety net under the rule that no code logs a secret: whatever
a line says (SQL with its parameters included) is scrubbed of tokens, passwords,
codes, card numbers, webhook secrets and URL signatures before any handler
writes it.
"""

import contextvars
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from pythonjsonlogger.json import JsonFormatter

CONTEXT_FIELDS = ("request_id", "program_id", "customer_id", "user_id")
# The longest request id: a caller's own `X-Request-Id` is kept up to this length.
REQUEST_ID_MAX_LENGTH = 128
# The Celery message header that carries the context from the caller to the task.
TASK_HEADER = "bankapi_log_context"

# Immutable: each bind sets a new mapping, so a task or thread that copied the
# context never sees a later change of its parent's.
_context: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "bankapi_log_context", default=MappingProxyType({})
)


def log_context() -> dict[str, str]:
    """The ids bound for the current request or task."""
    return dict(_context.get())


def log_context_bind(**values: object) -> None:
    """Add ids to the current context (None values are left out)."""
    unknown = set(values) - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"Not a log context field: {', '.join(sorted(unknown))}")
    bound = {name: str(value) for name, value in values.items() if value is not None}
    _context.set(MappingProxyType({**_context.get(), **bound}))


def log_context_start(*, request_id: str) -> None:
    """A fresh context for a request, replacing the previous request's.

    Not undone when the middleware returns: Django writes some lines of the
    request after the middleware (the warning for a 4xx or 5xx answer, the
    development server's request line), and they carry the id too. The next
    request in this thread starts its own.
    """
    _context.set(MappingProxyType({"request_id": request_id}))


def log_request_id() -> str | None:
    """The id of the request whose work this is (None outside any request): what
    a record written now keeps, so that later work on it logs the same id."""
    return _context.get().get("request_id")


@contextmanager
def log_context_of_request(request_id: str | None) -> Iterator[None]:
    """Work done later for a request (an event's fan-out or delivery, by a worker
    or after the request's commit) logs that request's id while the block runs;
    the previous context comes back afterwards, so a thread that works for many
    requests in turn (the outbox relay) logs each under its own.

    Within the same request the context stays as it is (its tenant ids too);
    otherwise the block's lines carry that request id alone, or none (None:
    work that no request caused, such as a beat job's), never the ids of
    whatever request or task happens to run the block.
    """
    current = _context.get()
    if request_id is not None and current.get("request_id") == request_id:
        yield
        return
    token = _context.set(MappingProxyType({"request_id": request_id} if request_id else {}))
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Puts the bound ids on every record (None when not known)."""

    def filter(self, record: logging.LogRecord) -> bool:
        bound = _context.get()
        for name in CONTEXT_FIELDS:
            if not hasattr(record, name):
                setattr(record, name, bound.get(name))
        return True


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# Names whose value is a secret, as suffixes (`totp_code`, `X-Amz-Signature`,
# `refresh_token`); a sort code is a bank's public routing number, not a code.
_SENSITIVE_NAME = (
    r"[\w-]*(?:password|passwd|token|secret|signature|authorization|cookie|cvv|cvc|"
    r"pin|pan|otp|credential|private[_-]?key|(?<![sS]ort)(?<![sS]ort_)code)"
)


def _redacted_value(found: re.Match[str]) -> str:
    value = found.group(0)[len(found.group("name")) :]
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{found.group('name')}{quote}[REDACTED]{quote}"


_REDACTIONS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    # JSON web tokens (access and id tokens), whatever surrounds them.
    (re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"), "[REDACTED]"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"), r"\1 [REDACTED]"),
    (re.compile(r"whsec_[A-Za-z0-9+/=_-]+"), "whsec_[REDACTED]"),
    # name=value, name: value and "name": "value" pairs whose name says secret:
    # query strings (URL signatures), form bodies, headers, JSON and repr() output.
    (
        re.compile(
            rf"(?i)(?P<name>[\"']?(?<![\w-]){_SENSITIVE_NAME}[\"']?\s*(?:=|:)\s*)"
            r"(?:\"[^\"]*\"|'[^']*'|[^\"'&\s,;}\]]+)"
        ),
        _redacted_value,
    ),
    # Card numbers: 13 to 19 digits passing the Luhn check, alone or grouped.
    (
        re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w.-])"),
        lambda found: (
            "[REDACTED-PAN]"
            if _luhn_valid(digits := re.sub(r"\D", "", found.group(0))) and 13 <= len(digits) <= 19
            else found.group(0)
        ),
    ),
]


def redact(text: str) -> str:
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


class RedactFilter(logging.Filter):
    """Rewrites each record's message (and traceback) with secrets removed.

    The message is rendered here, arguments included, so that a secret in a
    parameter (an SQL statement's, a URL's query) is scrubbed like one in the text.
    """

    _traceback = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_bankapi_redacted", False):
            return True
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._traceback.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        record._bankapi_redacted = True
        return True


class JsonLineFormatter(JsonFormatter):
    """One JSON object per line: timestamp, level, logger, message, the request
    id, and the program, customer and user ids when known."""

    def add_fields(self, log_record: dict[str, Any], record: logging.LogRecord, message_dict: dict) -> None:
        log_record["timestamp"] = self.formatTime(record)
        log_record["level"] = record.levelname
        log_record["logger"] = record.name
        log_record["message"] = record.getMessage()
        log_record["request_id"] = getattr(record, "request_id", None)
        for name in CONTEXT_FIELDS[1:]:
            value = getattr(record, name, None)
            if value is not None:
                log_record[name] = value
        # Set (and scrubbed) by RedactFilter.
        if record.exc_text:
            log_record["exc_info"] = record.exc_text
        if record.stack_info:
            log_record["stack_info"] = record.stack_info

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds")


class TextLineFormatter(logging.Formatter):
    """Readable lines for a terminal: time, level, logger, [request id], message."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802
        return self._style._fmt % {
            **record.__dict__,
            "request_id": getattr(record, "request_id", None) or "-",
        }


def logging_settings(*, json_lines: bool, level: str) -> dict[str, Any]:
    """Django's LOGGING: one console handler, with context and redaction filters."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": "bankapi.ops.logs.ContextFilter"},
            "redact": {"()": "bankapi.ops.logs.RedactFilter"},
            # A traceback of the database or Redis away becomes one throttled line.
            "outage": {"()": "bankapi.ops.outages.OutageLineFilter"},
            "client_error": {"()": "bankapi.ops.logs.ClientErrorLineFilter"},
        },
        "formatters": {
            "json": {"()": "bankapi.ops.logs.JsonLineFormatter"},
            "text": {"()": "bankapi.ops.logs.TextLineFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                # JSON lines on stdout, where a container's log shipper reads;
                # readable lines on stderr. A management command logs to stderr
                # in either format (`logging_to_stderr`, called by manage.py).
                "stream": "ext://sys.stdout" if json_lines else "ext://sys.stderr",
                "filters": ["outage", "context", "redact"],
                "formatter": "json" if json_lines else "text",
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Django's own handlers would write some lines past the filters: the
            # development server's request lines (query strings included) and,
            # with DEBUG, the console copy of the django logger.
            "django": {"handlers": [], "level": level, "propagate": True},
            "django.server": {"handlers": [], "level": level, "propagate": True},
            # A request with a Host that ALLOWED_HOSTS does not name (a scanner, a
            # misrouted client): answered 400, logged in one line.
            "django.security.DisallowedHost": {"filters": ["client_error"], "propagate": True},
        },
    }


class ClientErrorLineFilter(logging.Filter):
    """A logger's filter for a client's mistake that Django logs as an error with
    its traceback: one warning line (the message names what was wrong), since
    nothing in the service's code failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


def logging_to_stderr(logging_config: dict[str, Any]) -> None:
    """Send the console handler of `logging_settings` to stderr, whatever the
    format: for a management command, whose stdout is its answer. A deployment's
    web and worker processes keep JSON lines on stdout."""
    logging_config["handlers"]["console"]["stream"] = "ext://sys.stderr"


# Celery: the context travels in the task message (`before_task_publish` runs in
# the process that queues) and is restored around the task (`task_prerun` and
# `task_postrun` run in the worker). A task run in-process (no broker) publishes
# nothing and simply keeps the caller's context.
_task_tokens: dict[str, contextvars.Token[Mapping[str, str]]] = {}


def task_context_publish(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    bound = _context.get()
    if headers is not None and bound:
        headers[TASK_HEADER] = dict(bound)


def task_context_enter(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    request = getattr(task, "request", None)
    # Celery puts a message's own headers on the task's request.
    carried = getattr(request, TASK_HEADER, None)
    if task_id and isinstance(carried, dict):
        values = {name: str(value) for name, value in carried.items() if name in CONTEXT_FIELDS}
        _task_tokens[task_id] = _context.set(MappingProxyType(values))


def task_context_exit(task_id: str | None = None, **kwargs: Any) -> None:
    token = _task_tokens.pop(task_id, None) if task_id else None
    if token is not None:
        _context.reset(token)
