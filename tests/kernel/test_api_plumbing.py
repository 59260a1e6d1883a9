"""The envelope, errors and service routes every client relies on."""

import json
import re
import uuid

import pytest
from openapi_spec_validator import validate

from bankapi.errors import HTTP_STATUS, DomainErrorCode, ErrorCode, error_codes, error_codes_register


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["success"] is False
    assert body["code"] == code
    assert isinstance(body["message"], str) and body["message"]
    return body


def test_error_codes_map_to_the_design_table():
    expected = {
        "VALIDATION_ERROR": 400,
        "IDEMPOTENCY_KEY_MISMATCH": 400,
        "UNAUTHORIZED": 401,
        "FORBIDDEN": 403,
        "RESOURCE_NOT_FOUND": 404,
        "CARD_NOT_FOUND": 404,
        "IDEMPOTENCY_KEY_IN_PROGRESS": 409,
        "WEB_TOKEN_PROVIDER_MISMATCH": 409,
        "INSUFFICIENT_FUNDS": 422,
        "LIMIT_EXCEEDED": 422,
        "PROVIDER_ERROR": 422,
        "UNSUPPORTED_PARAMETER": 422,
        "NOT_SUPPORTED": 422,
        "QUOTE_EXPIRED": 422,
        "QUOTE_ALREADY_USED": 422,
        "DRAFT_EXPIRED": 422,
        "INVALID_STATE": 409,
        "DUPLICATE_MESSAGE": 409,
        "PAYLOAD_TOO_LARGE": 413,
        "UNSUPPORTED_MEDIA_TYPE": 415,
        "INVALID_CREDENTIALS": 401,
        "TOO_MANY_REQUESTS": 429,
        "INTERNAL_SERVER_ERROR": 500,
    }
    assert {code: HTTP_STATUS[code] for code in error_codes() if code in expected} == expected


# Every code the API answered before the domains registered their own.
EVERY_CODE = {
    *("VALIDATION_ERROR", "IDEMPOTENCY_KEY_MISMATCH", "UNAUTHORIZED", "INVALID_CREDENTIALS", "FORBIDDEN"),
    *("RESOURCE_NOT_FOUND", "CARD_NOT_FOUND", "METHOD_NOT_ALLOWED", "IDEMPOTENCY_KEY_IN_PROGRESS"),
    *("WEB_TOKEN_PROVIDER_MISMATCH", "INVALID_STATE", "LENGTH_REQUIRED", "DUPLICATE_MESSAGE"),
    *(
        "PAYLOAD_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "INSUFFICIENT_FUNDS",
        "LIMIT_EXCEEDED",
        "PROVIDER_ERROR",
    ),
    *("UNSUPPORTED_PARAMETER", "NOT_SUPPORTED", "QUOTE_EXPIRED", "QUOTE_ALREADY_USED", "DRAFT_EXPIRED"),
    *("TOO_MANY_REQUESTS", "SERVICE_UNAVAILABLE", "INTERNAL_SERVER_ERROR"),
}


def test_the_domains_codes_are_registered_and_in_the_openapi_document():
    from tests.support.openapi import openapi_document

    schemas = openapi_document()["components"]["schemas"]
    enum = schemas[schemas["Error"]["properties"]["code"]["$ref"].rsplit("/", 1)[-1]]["enum"]

    assert set(error_codes()) == EVERY_CODE
    assert enum == sorted(EVERY_CODE)
    # The kernel lists only its own: a domain's code is the domain's.
    assert {
        *("CARD_NOT_FOUND", "QUOTE_EXPIRED", "WEB_TOKEN_PROVIDER_MISMATCH", "INSUFFICIENT_FUNDS"),
        *("LIMIT_EXCEEDED", "DUPLICATE_MESSAGE", "DRAFT_EXPIRED", "INVALID_CREDENTIALS"),
    }.isdisjoint(set(ErrorCode))


def test_a_code_registered_again_with_another_status_is_refused():
    class Clash(DomainErrorCode):
        CARD_NOT_FOUND = "CARD_NOT_FOUND"

    error_codes_register({Clash.CARD_NOT_FOUND: 404})  # the same status: the same code
    with pytest.raises(ValueError, match="already registered with status 404"):
        error_codes_register({Clash.CARD_NOT_FOUND: 410})

    assert HTTP_STATUS["CARD_NOT_FOUND"] == 404


def test_unknown_route_is_an_enveloped_404(api, db):
    response = api.get("/v1/no-such-route")
    assert_error(response, 404, "RESOURCE_NOT_FOUND")


def test_wrong_method_is_an_enveloped_405(api, customer_auth):
    response = api.post("/v1/capabilities", {}, format="json", **customer_auth)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


def test_wrong_method_is_a_405_before_a_management_caller_is_asked_for_programid(api, management):
    """Found by schemathesis: the missing programId used to answer 400 for a method
    the route does not have."""
    response = api.put("/v1/events", {}, format="json", **management.id)

    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"


def test_every_response_carries_a_request_id(api, db):
    def is_new_request_id(value: str) -> bool:
        return str(uuid.UUID(value)) == value and uuid.UUID(value).version == 4

    first, second = (api.get("/healthz")["X-Request-Id"] for _ in range(2))
    assert is_new_request_id(first) and is_new_request_id(second) and first != second
    assert api.get("/healthz", HTTP_X_REQUEST_ID="abc-123")["X-Request-Id"] == "abc-123"
    # An id that is not safe to log is replaced, not echoed.
    replaced = api.get("/healthz", HTTP_X_REQUEST_ID="bad id\n")["X-Request-Id"]
    assert replaced != "bad id\n" and is_new_request_id(replaced)
    # A safe id followed by a newline is not safe: `$` alone matched before it.
    ends_in_newline = api.get("/healthz", HTTP_X_REQUEST_ID="abc-123\n")["X-Request-Id"]
    assert is_new_request_id(ends_in_newline)
    assert is_new_request_id(api.get("/v1/no-such-route")["X-Request-Id"])


def test_health_and_readiness(api, db):
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["database"] == "ok"


def test_jwks_publishes_the_signing_key(api, db):
    keys = api.get("/.well-known/jwks.json").json()["keys"]
    assert len(keys) >= 1
    assert {"kty", "kid", "n", "e", "alg", "use"} <= set(keys[0])
    assert keys[0]["alg"] == "RS256"


def test_openapi_document_generates_and_validates(api, db):
    response = api.get("/v1/openapi.json")
    assert response.status_code == 200
    document = json.loads(response.content)
    validate(document)
    assert document["openapi"].startswith("3.")
    assert "/v1/capabilities" in document["paths"]
    assert "bearerAuth" in document["components"]["securitySchemes"]


def test_openapi_generation_has_no_warnings(capsys):
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")
    assert "Warning" not in capsys.readouterr().err


def test_swagger_ui_is_served(api, db):
    response = api.get("/v1/docs")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer not-a-jwt", "Basic dXNlcjpwYXNz", "Bearer a.b.c", "Token abc"],
)
def test_malformed_bearer_is_unauthorized(api, db, header):
    assert_error(api.get("/v1/capabilities", HTTP_AUTHORIZATION=header), 401, "UNAUTHORIZED")


def test_missing_bearer_is_unauthorized(api, db):
    response = api.get("/v1/capabilities")
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_an_unexpected_failure_is_an_enveloped_500_without_internals(api, customer_auth, monkeypatch):
    def explode(scope):
        raise RuntimeError("database password is hunter2")

    monkeypatch.setattr("bankapi.http.views.capabilities_get", explode)
    response = api.get("/v1/capabilities", HTTP_X_REQUEST_ID="trace-500", **customer_auth)

    body = assert_error(response, 500, "INTERNAL_SERVER_ERROR")
    assert body["requestId"] == "trace-500"
    assert "hunter2" not in response.content.decode()


def test_a_non_json_body_is_a_400_not_a_415(api, program):
    response = api.generic(
        "POST",
        "/v1/auth/login",
        "email=a&password=b",
        content_type="application/x-www-form-urlencoded",
        HTTP_X_PROGRAM_ID=str(program.id),
    )
    assert_error(response, 400, "VALIDATION_ERROR")


def _api_routes(patterns, prefix: str = "") -> set[str]:
    routes = set()
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if hasattr(pattern, "url_patterns"):
            routes |= _api_routes(pattern.url_patterns, route)
        elif route.startswith("v1/") and route not in {"v1/openapi.json", "v1/docs"}:
            routes.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))
    return routes


def test_every_api_route_is_in_the_openapi_document_with_its_errors(api, db):
    from django.urls import get_resolver

    document = json.loads(api.get("/v1/openapi.json").content)
    routes = _api_routes(get_resolver().url_patterns)

    assert routes - set(document["paths"]) == set()
    for path in routes:
        for method, operation in document["paths"][path].items():
            statuses = set(operation["responses"])
            # A success, or the redirect of a signed link (a UBO's verification link).
            assert statuses & {"200", "302", "303"}, (method, path)
            # Routes without a bearer (signed URLs) refuse with 403, not 401.
            assert statuses & {"400", "401", "403"}, f"{method} {path} documents no error response"


def test_deeply_nested_json_is_a_400(api, program):
    body = "[" * 100_000 + "]" * 100_000
    response = api.generic(
        "POST",
        "/v1/auth/login",
        body,
        content_type="application/json",
        HTTP_X_PROGRAM_ID=str(program.id),
    )
    assert_error(response, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize("charset", ["base64", "rot13"])
def test_a_body_in_a_non_text_charset_is_a_400(api, program, charset):
    response = api.generic(
        "POST",
        "/v1/auth/login",
        b'{"email": "a@b.c", "password": "x"}',
        content_type=f"application/json; charset={charset}",
        HTTP_X_PROGRAM_ID=str(program.id),
    )
    assert_error(response, 400, "VALIDATION_ERROR")


def test_the_root_address_says_where_to_go_next(client):
    response = client.get("/")

    assert response.status_code == 200
    links = response.json()["data"]
    assert links["docs"] == "/v1/docs" and links["openapi"] == "/v1/openapi.json"
    for path in (links["docs"], links["openapi"], links["health"], links["jwks"]):
        assert client.get(path).status_code == 200, path
    assert client.get(links["admin"]).status_code == 302  # to the back office's sign-in
