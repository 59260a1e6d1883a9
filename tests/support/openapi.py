"""Every JSON response the suite receives must match `/v1/openapi.json`.

`tests/conftest.py` wraps Django's request handler (the one behind `APIClient`,
Django's `Client` and the live server) so that each JSON answer is checked
against the document for its path template, method and status: an undocumented
path, method or status, or a body that does not match its schema, fails the test
with the path, status and the field that mismatched.

Objects are checked closed: a key the document does not list is a mismatch,
since an integrator's generated client would drop or reject it.
"""

import copy
import json
import re
import threading
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from jsonschema import FormatChecker
from jsonschema.exceptions import best_match
from openapi_schema_validator import OAS30ReadValidator

# Not API operations: the back office, static files, and the document and its
# viewer, which do not describe themselves.
UNCHECKED_PREFIXES = ("/admin/", "/static/", "/v1/openapi.json", "/v1/docs")


@cache
def openapi_document() -> dict[str, Any]:
    """The document `/v1/openapi.json` serves, generated once per test run."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(schema))


def _closed(schema: Any) -> Any:
    """The schema as the check reads it.

    - Every object that lists its properties is closed to others.
    - `nullable: true` beside `allOf`/`oneOf` without a `type` (how drf-spectacular
      writes a nullable nested object) allows null, as generated clients and
      schemathesis read it; OpenAPI 3.0.3 read to the letter would not.
    """
    if isinstance(schema, dict):
        out = {key: _closed(value) for key, value in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        if out.get("nullable") is True and "type" not in out:
            del out["nullable"]
            return {"anyOf": [{"enum": [None]}, out]}
        return out
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@dataclass(frozen=True)
class Route:
    template: str
    pattern: re.Pattern


@cache
def _routes() -> tuple[Route, ...]:
    routes = []
    for template in openapi_document()["paths"]:
        regex = "".join(
            "[^/]+" if part.startswith("{") else re.escape(part)
            for part in re.split(r"(\{[^}]+\})", template)
        )
        routes.append(Route(template, re.compile(f"^{regex}$")))
    # A literal segment wins over a parameter: `/a/settle` before `/a/{id}`.
    return tuple(sorted(routes, key=lambda route: route.template.count("{")))


def route_for(path: str) -> str | None:
    return next((route.template for route in _routes() if route.pattern.match(path)), None)


def _is_number(instance: Any) -> bool:
    return isinstance(instance, int | float | Decimal) and not isinstance(instance, bool)


# Bodies are read with numbers as Decimal (as the API writes them, digit for digit),
# so the number formats accept a Decimal; the other formats (uuid, date-time) stay.
_FORMATS = FormatChecker()
_FORMATS.checkers = {
    **OAS30ReadValidator.FORMAT_CHECKER.checkers,
    "double": (_is_number, ()),
    "float": (_is_number, ()),
}


@cache
def _validator(template: str, method: str, status: str) -> OAS30ReadValidator | None:
    response = openapi_document()["paths"][template][method]["responses"][status]
    schema = response.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return None
    components = _closed(copy.deepcopy(openapi_document()["components"]))
    root = {"allOf": [_closed(schema)], "components": components}
    return OAS30ReadValidator(root, format_checker=_FORMATS)


def _where(error) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return path.lstrip(".") or "(the body)"


def _is_error_envelope(body: Any) -> bool:
    validator = _error_validator()
    return validator.is_valid(body)


@cache
def _error_validator() -> OAS30ReadValidator:
    components = _closed(copy.deepcopy(openapi_document()["components"]))
    root = {"allOf": [{"$ref": "#/components/schemas/Error"}], "components": components}
    return OAS30ReadValidator(root)


def mismatch(method: str, path: str, status: int, content_type: str, content: bytes) -> str | None:
    """Why this answer does not match the document, or None when it does."""
    if path.startswith(UNCHECKED_PREFIXES) or not content_type.startswith("application/json"):
        return None
    method = method.lower()
    where = f"{method.upper()} {path} answered {status}"
    try:
        body = json.loads(content, parse_float=Decimal)
    except ValueError:
        return f"{where}: the body is not JSON although the Content-Type says so"
    template = route_for(path)
    if template is None:
        if status == 404 and _is_error_envelope(body):
            return None  # no such route: the generic not-found envelope
        return f"{where}: the path is not in /v1/openapi.json"
    where = f"{method.upper()} {template} ({path}) answered {status}"
    operations = openapi_document()["paths"][template]
    if method not in operations:
        if status == 405 and _is_error_envelope(body):
            return None
        if method == "head" and "get" in operations:
            method = "get"
        else:
            return f"{where}: the method is not documented for this path (documented: {sorted(operations)})"
    responses = operations[method]["responses"]
    if str(status) not in responses:
        return f"{where}: status {status} is not documented (documented: {sorted(responses)})"
    validator = _validator(template, method, str(status))
    if validator is None:
        return f"{where}: the document gives no JSON schema for this status"
    errors = list(validator.iter_errors(body))
    if not errors:
        return None
    details = "; ".join(f"at {_where(error)}: {error.message}" for error in errors[:5])
    first = best_match(errors)
    return f"{where}: body does not match the documented schema at {_where(first)}: {details}\nbody: {body}"


class ResponseChecker:
    """Checks each response; raises at once in the test's own thread, and keeps
    what other threads (the live server) found for the end of the test."""

    def __init__(self) -> None:
        self.found_elsewhere: list[str] = []
        self.test_thread = threading.current_thread()

    def check(self, request, response) -> None:
        if getattr(response, "streaming", False):
            return
        problem = mismatch(
            request.method,
            request.path_info,
            response.status_code,
            response.get("Content-Type", ""),
            response.content,
        )
        if problem is None:
            return
        if threading.current_thread() is self.test_thread:
            raise AssertionError(f"OpenAPI mismatch: {problem}")
        self.found_elsewhere.append(problem)
