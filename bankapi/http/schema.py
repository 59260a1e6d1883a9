"""OpenAPI building blocks: the envelopes and the error responses of every route."""

import inspect
from itertools import combinations
from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

from bankapi.errors import HTTP_STATUS, ErrorCode, error_codes


def _own_doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if doc else ""


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema, with three rules of this API.

    - A class's docstring is published only where the class itself has one:
      drf-spectacular would otherwise hand a base class's docstring (written for
      maintainers, e.g. `InputSerializer`'s or a base view's) to every subclass.
    - A field's `openapi` keywords (`StrictCharField(openapi=...)`) are added to
      its schema: the patterns and formats the serializer checks in code.
    - An input text without a pattern, format or enum of its own states the rules
      every DRF CharField applies (`TEXT_PATTERN`, `NONBLANK_TEXT_PATTERN`).
    - Request bodies are closed (`additionalProperties: false`), as the service
      refuses unknown fields at any depth.
    """

    def get_description(self) -> str:  # type: ignore[override]  # drf-spectacular's, not DRF's
        method = getattr(self.view, getattr(self.view, "action", self.method.lower()), None)
        method_doc = inspect.getdoc(method) if method is not None else None
        return method_doc or _own_doc(self.view.__class__)

    def _map_serializer_field(
        self, field: serializers.Field[Any, Any, Any, Any], direction: str, bypass_extensions: bool = False
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(  # type: ignore[no-untyped-call]
            field, direction, bypass_extensions
        )
        extra = getattr(field, "openapi", None)
        if extra and "$ref" not in schema:
            schema.update(extra)
        child = getattr(field, "child", None)
        if direction == "request" and isinstance(child, serializers.CharField) and "items" in schema:
            # The items' validators are in their schema already (drf-spectacular adds them here).
            _state_text_rules(child, schema["items"])
        return schema

    def _get_request_for_media_type(self, serializer: Any, direction: str = "request") -> tuple[Any, bool]:
        schema, required = super()._get_request_for_media_type(serializer, direction)  # type: ignore[no-untyped-call]
        # A body whose key rules refuse `{}` (InputSerializer.refused_combinations) is
        # required although none of its keys is: sending none is sending `{}`.
        if (
            schema is not None
            and _refused_bodies(serializer)
            and not _admits_empty(_refused_bodies(serializer))
        ):
            required = True
        if isinstance(serializer, dict) and serializer.get("format") == "binary":
            # A document body (an ISO 20022 file): sending none is sending an empty one.
            required = True
        return schema, required

    def _map_basic_serializer(
        self, serializer: serializers.BaseSerializer[Any], direction: str
    ) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(serializer, direction)  # type: ignore[no-untyped-call]
        if direction == "request":
            # Request bodies refuse keys they do not take, at any depth (InputSerializer).
            schema["additionalProperties"] = False
            refused = _refused_bodies(serializer)
            if refused:
                schema["not"] = {"anyOf": refused}
            # After drf-spectacular has added each field's validators (a RegexValidator's pattern).
            fields = getattr(serializer, "fields", {})
            for name, property_schema in schema.get("properties", {}).items():
                field = fields.get(name)
                if isinstance(field, serializers.CharField):
                    _state_text_rules(field, property_schema)
        schema.pop("description", None)
        description = _own_doc(serializer.__class__)
        if description:
            schema["description"] = description
        return schema


# Every DRF CharField refuses a NUL character ("Null characters are not allowed.").
TEXT_PATTERN = r"^[^\u0000]*$"
# A trimmed field that may not be blank also needs one character that is not
# whitespace (Python's `str.strip()` also strips \x1c-\x1f and \x85, which a
# JavaScript `\s` does not name, so they are listed).
NONBLANK_TEXT_PATTERN = r"^[^\u0000]*[^\s\u0000\u001c-\u001f\u0085][^\u0000]*$"


# An absolute http(s) URL as Django's URLValidator takes it, on localhost, an IPv4
# address or a host name (up to 253 characters: at most five labels of at most 46
# characters keep any name of this shape within that). An IPv6 host, which Django
# also takes, is not described.
_IPV4_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
HTTP_URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://"
    rf"([Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]|{_IPV4_OCTET}(\.{_IPV4_OCTET}){{3}}"
    r"|([A-Za-z0-9]([A-Za-z0-9-]{0,44}[A-Za-z0-9])?\.){1,4}[A-Za-z]{2,46}\.?)"
    r"(:[0-9]{1,4})?([/?#][^\s\u0000\u001c-\u001f\u0085]*)?$"
)


def _admits_empty(refused: list[dict[str, Any]]) -> bool:
    """Whether `{}` escapes every refused body (checked with the document's own rules)."""
    from jsonschema import Draft4Validator  # type: ignore[import-untyped]

    return not Draft4Validator({"anyOf": refused}).is_valid({})


def _refused_bodies(serializer: object) -> list[dict[str, Any]]:
    """The bodies an InputSerializer refuses for the keys they combine, as JSON Schemas
    a body must not match: none or two of `exactly_one_of`, and `refused_combinations`.

    Stated with a `not` rather than a `oneOf` of `required` lists: openapi-python-client
    turns an object with a `oneOf` into an untyped `Any`, and leaves a `not` alone.
    """
    names: tuple[str, ...] = getattr(serializer, "exactly_one_of", ())
    refused: list[dict[str, Any]] = []
    if names:
        refused.append({"not": {"anyOf": [{"required": [name]} for name in names]}})
        refused.extend({"required": list(pair)} for pair in combinations(names, 2))
    refused.extend(getattr(serializer, "refused_combinations", ()))
    return refused


def _state_text_rules(field: serializers.CharField, schema: dict[str, Any]) -> None:
    """The NUL and blank rules of a CharField, as a `pattern` on its request schema.

    Left alone where the schema already narrows the text (a `pattern`, a `format`
    or an `enum`): those admit neither a NUL nor whitespace alone.
    """
    if schema.get("type") != "string" or {"pattern", "format", "enum", "$ref"} & schema.keys():
        return
    if field.trim_whitespace and not field.allow_blank:
        schema["pattern"] = NONBLANK_TEXT_PATTERN
    else:
        schema["pattern"] = TEXT_PATTERN


class FieldErrorSerializer(serializers.Serializer):
    field = serializers.CharField()
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    success = serializers.BooleanField(default=False)
    # Every code, the domains' included: `get_fields` reads them when the document
    # is made, once the apps have registered theirs (`error_codes_register`).
    code = serializers.ChoiceField(choices=[c.value for c in ErrorCode])
    message = serializers.CharField()
    # A field named `errors`: DRF takes declared fields off the class, so `.errors` stays.
    errors = FieldErrorSerializer(  # type: ignore[assignment]
        many=True, required=False, help_text="On VALIDATION_ERROR."
    )
    retryable = serializers.BooleanField(required=False, help_text="On authentication errors.")
    requestId = serializers.CharField(
        required=False, help_text="On INTERNAL_SERVER_ERROR and SERVICE_UNAVAILABLE."
    )
    batchId = serializers.CharField(
        required=False, help_text="On DUPLICATE_MESSAGE: the draft or batch the earlier file made."
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        fields["code"] = serializers.ChoiceField(choices=error_codes())
        return fields


_DESCRIPTIONS = {
    400: "VALIDATION_ERROR: invalid body or query (field errors in `errors`).",
    401: "UNAUTHORIZED: missing, malformed, expired, revoked or wrong-use token.",
    403: "FORBIDDEN: the caller's role may not use this route.",
    404: "RESOURCE_NOT_FOUND: no such object for this caller (another tenant's included).",
    405: "METHOD_NOT_ALLOWED.",
    409: "Conflict with the object's current state.",
    411: "LENGTH_REQUIRED: a chunked body the server could not read; send it with Content-Length.",
    415: "UNSUPPORTED_MEDIA_TYPE: the body's Content-Type is not one the route takes.",
    422: "The request was understood but cannot be carried out.",
    429: "TOO_MANY_REQUESTS: retry after the `Retry-After` header's seconds.",
    503: (
        "SERVICE_UNAVAILABLE: the database cannot be reached for a moment. Retry after the "
        "`Retry-After` header's seconds (a create with the same `Idempotency-Key`)."
    ),
}


def error_responses(*statuses: int, **descriptions: str) -> dict[int, OpenApiResponse]:
    """Error responses for `extend_schema(responses=...)`.

    `descriptions` overrides the text per status, e.g. `s422="INSUFFICIENT_FUNDS ..."`.
    """
    out = {}
    for status in (*statuses, 500, 503):
        text = descriptions.get(f"s{status}") or _DESCRIPTIONS.get(
            status, "INTERNAL_SERVER_ERROR, with the request id."
        )
        out[status] = OpenApiResponse(ErrorSerializer, description=text)
    return out


# The statuses every idempotent create POST answers besides 200: a broken rule
# or a key used for another request (400), the caller (401, 403), what the path
# or body names (404), the key's first request still running (409).
POST_STATUSES = (400, 401, 403, 404, 409)


def post_responses(
    component: str,
    data: serializers.Field[Any, Any, Any, Any],
    *more: int,
    made: str | None = None,
    **descriptions: str,
) -> dict[int, OpenApiResponse | serializers.Serializer[Any]]:
    """The documented answers of a create POST under an Idempotency-Key, for
    `extend_schema(responses=...)`: 200 `{"success": true, "data": <data>}`
    (the schema component `component`; with `made`, described as made and
    replayed with `Idempotent-Replayed: true`), then `error_responses` of
    `POST_STATUSES` and `more` (e.g. 422), `descriptions` per status as there."""
    answer = envelope(component, data)
    ok: OpenApiResponse | serializers.Serializer[Any] = (
        answer
        if made is None
        else OpenApiResponse(
            answer, description=f"{made} `Idempotent-Replayed: true` on a replay of the first answer."
        )
    )
    return {200: ok, **error_responses(*POST_STATUSES, *more, **descriptions)}


def codes_for(status: int) -> list[str]:
    return [str(code) for code, code_status in HTTP_STATUS.items() if code_status == status]


def envelope(name: str, data: serializers.Field[Any, Any, Any, Any]) -> serializers.Serializer[Any]:
    """`{"success": true, "data": <data>}` as a named schema component."""
    return inline_serializer(
        name=name, fields={"success": serializers.BooleanField(default=True), "data": data}
    )


PROGRAM_ID_HEADER = OpenApiParameter(
    "x-program-id",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "The program the user signs in to. May be sent as the `programId` query "
        "parameter instead. Omitted by management users, who belong to no program."
    ),
)


def management_program_id(description: str, *, management_only: bool) -> OpenApiParameter:
    """The `programId` query parameter a management caller names its program with:
    required for it (an empty value is a 400), ignored for other callers (so only a
    route of management callers alone can state it as non-empty)."""
    return OpenApiParameter(
        "programId",
        {"type": "string", "minLength": 1} if management_only else {"type": "string"},
        OpenApiParameter.QUERY,
        required=False,
        description=description,
    )


PROGRAM_ID_QUERY = OpenApiParameter(
    "programId",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description="Alternative to the x-program-id header.",
)


def document_payload_limit(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: every route refuses an oversized body at the door (413),
    and a chunked one the server could not decode (411)."""
    from django.conf import settings

    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            # A route with its own limit documents its own 413.
            responses.setdefault(
                "413",
                {"content": error, "description": f"PAYLOAD_TOO_LARGE: the body is over {limit} bytes."},
            )
            responses.setdefault("411", {"content": error, "description": _DESCRIPTIONS[411]})
    return result


def document_request_budget(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: every route has a request budget (429 with Retry-After),
    but those whose view throttles nothing (the probes and `/metrics`).

    A route that documents 429 for its own reasons (sign-in lockouts) keeps its
    text, with the budget added to it.
    """
    from django.conf import settings

    endpoints = getattr(generator, "endpoints", None) or []
    unbudgeted = {path for path, _, _, view in endpoints if not view.cls.throttle_classes}

    budget = (
        f"The request budget is spent: {settings.REQUEST_BUDGET_PER_TOKEN} requests per access or "
        f"id token, or {settings.REQUEST_BUDGET_PER_ADDRESS} per client address for requests "
        f"without a bearer, in each window of {settings.REQUEST_BUDGET_WINDOW_SECONDS} seconds."
    )
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    retry_after = {
        "Retry-After": {
            "schema": {"type": "integer", "minimum": 1},
            "description": "Seconds to wait before trying again.",
        }
    }
    for path, operations in result.get("paths", {}).items():
        if path in unbudgeted:
            continue
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            own = responses.get("429")
            if own is None:
                responses["429"] = {
                    "content": error,
                    "headers": retry_after,
                    "description": f"TOO_MANY_REQUESTS: {budget} Retry after `Retry-After` seconds.",
                }
            else:
                own.setdefault("headers", {}).update(retry_after)
                own["description"] = f"{own.get('description', '')} Also: {budget}".strip()
    return result


OPTIONAL_BEARER = (
    "Authentication: an access token as `Authorization: Bearer <token>`, or instead the session "
    "token of the sign-in step named in the body; the route needs no bearer."
)


def public_routes_take_no_bearer(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: a route that needs no bearer says `security: []`.

    drf-spectacular writes `[{}]` ("anonymous allowed") there, and
    `[{"bearerAuth": []}, {}]` for a route that takes a bearer optionally (a
    session token in the body will do): openapi-python-client reads any
    non-empty list as needing its authenticated client, which such a route does
    not. Both become `[]`; an optional bearer is said in the description.
    """
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            security = operation.get("security", [{}])
            if security == [{}]:
                operation["security"] = []
            elif {} in security:
                operation["security"] = []
                operation["description"] = f"{operation.get('description', '')}\n\n{OPTIONAL_BEARER}".strip()
    return result
