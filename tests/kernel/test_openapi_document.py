"""The OpenAPI document speaks to integrators, states the input rules the service
enforces, and the response check (tests/support/openapi.py) catches drift."""

import json
import re
import uuid

import pytest
from django.urls import resolve

from bankapi.http.permissions import TokenRequired
from onboarding.document_formats import DOCUMENT_CONTENT_TYPES
from tests.support import openapi as check
from tests.support.openapi import mismatch, openapi_document

PAYMENTS = "/v1/customers/{customerId}/accounts/{accountId}/payments"
SETTLE = "/v1/sandbox/payment-requests/{requestId}/settle"


def texts(document: dict):
    """(where, text) of every description and summary in the document."""

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("description", "summary") and isinstance(value, str):
                    yield f"{where}/{key}", value
                else:
                    yield from walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from walk(value, f"{where}/{index}")

    yield from walk(document, "")


INTERNAL_NOTES = [
    re.compile(r"\b(spec|design)(\.md)?\s*(section\s*)?[0-9]", re.I),
    re.compile(r"\bDESIGN\b"),
    re.compile(r"context\["),
    re.compile(r"\.md\b"),
    re.compile(r"https?://(?!localhost|127\.0\.0\.1)"),
    re.compile(r"\bself\.|\bkwargs\b|\bqueryset\b|\bserializer\b", re.I),
]


def test_descriptions_carry_no_internal_notes_or_outside_links():
    found = [
        (where, text)
        for where, text in texts(openapi_document())
        if any(note.search(text) for note in INTERNAL_NOTES)
    ]
    assert found == []


def test_every_route_a_description_names_exists():
    document = openapi_document()
    named = {
        (method.lower(), path.rstrip(".,;:)"))
        for _, text in texts(document)
        for method, path in re.findall(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s`]+)", text)
    }
    missing = [(m, p) for m, p in named if m not in document["paths"].get(p, {})]
    assert named and missing == []


def test_public_routes_need_no_bearer_and_the_others_require_it():
    """The document's security follows each view's own permission classes."""
    document = openapi_document()
    wrong = []
    for path, operations in document["paths"].items():
        view_class = resolve(re.sub(r"\{[^}]+\}", str(uuid.uuid4()), path)).func.cls
        requires_token = TokenRequired in view_class.permission_classes
        for method, operation in operations.items():
            security = operation.get("security", [])
            bearer_required = bool(security) and all("bearerAuth" in option for option in security)
            if bearer_required != requires_token:
                wrong.append((method, path, security))
    assert wrong == []
    for public in ("/healthz", "/readyz", "/.well-known/jwks.json", "/v1/auth/login", "/v1/auth/verify-2fa"):
        assert public in document["paths"]


def schema_of(name: str) -> dict:
    return openapi_document()["components"]["schemas"][name]


def test_the_input_rules_the_service_enforces_are_in_the_document():
    payment = schema_of("PaymentCreateRequest")["properties"]
    assert re.search(payment["amount"]["pattern"], "10.50")
    assert not any(re.search(payment["amount"]["pattern"], bad) for bad in ("0.00", "1.234", "1e3", "-1"))
    currencies = schema_of(payment["currency"]["allOf"][0]["$ref"].rsplit("/", 1)[-1])["enum"]
    assert "GBP" in currencies and not {"JPY", "KWD", "XAU"} & set(currencies)
    assert payment["idempotencyKey"]["format"] == "uuid"
    assert schema_of("CryptoQuoteRequest")["properties"]["quoteId"]["format"] == "uuid"
    assert schema_of("Verify2faInputRequest")["properties"]["totp_code"]["pattern"] == "^[0-9]{6}$"
    # Which keys an account takes depends on its type: one shape per type.
    assert schema_of("AccountObjectRequest")["discriminator"]["propertyName"] == "type"
    account = schema_of("UkAccountRequest")
    assert set(account["required"]) == {"type", "sortCode", "accountNumber"}
    assert re.search(account["properties"]["sortCode"]["pattern"], "04-00-04")
    assert not re.search(account["properties"]["accountNumber"]["pattern"], "1234567")
    assert set(schema_of("IbanAccountRequest")["required"]) == {"type", "iban"}
    # Exactly one of beneficiaryId, payee and cryptoQuote: a body must not send none or two.
    exactly_one = schema_of("PaymentCreateRequest")["not"]["anyOf"]
    assert exactly_one[0] == {
        "not": {
            "anyOf": [{"required": ["beneficiaryId"]}, {"required": ["payee"]}, {"required": ["cryptoQuote"]}]
        }
    }
    assert exactly_one[1:4] == [
        {"required": ["beneficiaryId", "payee"]},
        {"required": ["beneficiaryId", "cryptoQuote"]},
        {"required": ["payee", "cryptoQuote"]},
    ]
    # And a quote-funded payment cannot be scheduled.
    assert {"required": ["cryptoQuote", "scheduledDate"]} in exactly_one[4:]
    # Text with no pattern of its own states DRF's rules: no NUL, and not blank once trimmed.
    session_token = schema_of("Verify2faInputRequest")["properties"]["session_token"]["pattern"]
    assert re.search(session_token, "abc") and re.search(session_token, " a ")
    assert not any(re.search(session_token, bad) for bad in ("a\x00b", " ", "\u00a0\t", "\x1c"))

    parameters = {p["name"]: p for p in openapi_document()["paths"][PAYMENTS]["post"]["parameters"]}
    key = parameters["Idempotency-Key"]["schema"]
    assert re.search(key["pattern"], str(uuid.uuid4())) and not re.search(key["pattern"], "key-1")
    # Not `format: uuid`: an openapi-python-client client would send a UUID object as a header.
    assert "format" not in key
    listing = openapi_document()["paths"]["/v1/customers/{customerId}/accounts/{accountId}/transactions"]
    parameters = {p["name"]: p for p in listing["get"]["parameters"]}
    assert parameters["limit"]["schema"]["minimum"] == 1
    assert "pattern" in parameters["nextToken"]["schema"]


def test_the_iban_and_bic_patterns_state_each_countrys_length_format_and_country():
    iban = schema_of("IbanAccountRequest")["properties"]["iban"]["pattern"]
    bic = schema_of("IbanAccountRequest")["properties"]["bic"]["pattern"]

    assert all(
        re.search(iban, good)
        for good in ("GB82WEST12345698765432", "de89 3704 0044 0532 0130 00", "NO9386011117947")
    )
    # Wrong length, letters in a German account, no such country, a line break.
    assert not any(
        re.search(iban, bad)
        for bad in (
            "DE5137040044053201300",
            "DE2537040044ABCDEFGH00",
            "XX4610000000000001",
            "GB88WEST1234569876543",
            "NO37860111179470",
            "GB82WEST1234\n5698765432",
        )
    )
    assert re.search(bic, "DEUTDEFF") and re.search(bic, "cobadeffxxx")
    assert not any(re.search(bic, bad) for bad in ("DEUTXXFF", "DEUTDEF", "DEUTDEFF5"))


def test_request_bodies_stay_typed_in_generated_clients():
    """openapi-python-client types a `oneOf` with a discriminator as a union of models,
    but turns an object with any other `oneOf`, `anyOf` or `allOf` at its top into an
    untyped `Any`: rules between keys are stated with `not` instead."""
    schemas = openapi_document()["components"]["schemas"]
    for name, schema in schemas.items():
        if not name.endswith("Request"):
            continue
        combined = {"oneOf", "anyOf", "allOf"} & schema.keys()
        assert not combined or "discriminator" in schema, (name, combined)


def test_the_calendar_day_pattern_accepts_exactly_the_days_python_reads():
    from datetime import date

    from bankapi.formats import CALENDAR_DAY_PATTERN

    samples = ["2024-02-29", "2000-02-29", "0001-01-01", "9999-12-31", "2026-04-30", "2026-12-31"]
    samples += [
        "2023-02-29",
        "1900-02-29",
        "0000-01-01",
        "2026-04-31",
        "2026-13-01",
        "2026-00-10",
        "2026-1-1",
    ]
    for text in samples:
        try:
            date.fromisoformat(text)
            accepted = len(text) == 10
        except ValueError:
            accepted = False
        assert bool(re.search(CALENDAR_DAY_PATTERN, text)) == accepted, text


def test_the_text_patterns_accept_exactly_what_a_char_field_accepts():
    from rest_framework import serializers

    from bankapi.http.schema import NONBLANK_TEXT_PATTERN, TEXT_PATTERN

    samples = ["a", " a ", "\u00a0", " ", "\t\n", "\x1c", "\x85", "a\x00", "\x00", "\ufeffa", "é"]
    for pattern, field in (
        (NONBLANK_TEXT_PATTERN, serializers.CharField()),
        (TEXT_PATTERN, serializers.CharField(allow_blank=True)),
    ):
        for text in samples:
            try:
                field.run_validation(text)
                accepted = True
            except serializers.ValidationError:
                accepted = False
            assert bool(re.search(pattern, text)) == accepted, (pattern, text)


def test_the_amount_pattern_accepts_exactly_what_the_service_accepts():
    from payments.fields import AmountField

    pattern = AmountField.openapi["pattern"]
    samples = ["1", "01", "0.1", "0.01", "10.50", "9999999999999999.99", "00009999999999999999.99"]
    samples += ["0", "0.0", "0.00", ".5", "1.", "1.234", "10000000000000000", "1,00", " 1", "١"]
    for text in samples:
        field = AmountField()
        try:
            field.run_validation(text)
            accepted = True
        except Exception:  # noqa: BLE001 - any refusal counts
            accepted = False
        assert bool(re.search(pattern, text)) == accepted, text


def test_the_settle_answer_documents_settled():
    status = schema_of("PaymentRequest")["properties"]["status"]
    reference = status.get("$ref") or status["allOf"][0]["$ref"]
    assert schema_of(reference.split("/")[-1])["enum"] == [
        "PENDING",
        "PENDING_TM",
        "SETTLED",
        "FAILED",
        "RETURNED",
    ]


# The check itself: it must fail on drift, and say where.


def envelope(data) -> bytes:
    return json.dumps({"success": True, "data": data}).encode()


def settled(**overrides) -> dict:
    request = {
        "requestId": str(uuid.uuid4()),
        "status": "SETTLED",
        "amount": "25.00",
        "currency": "GBP",
        "reference": "Invoice 42",
        "beneficiaryId": None,
        "scheduleId": None,
        "failureReason": None,
        "createdDateTime": "2026-11-23T06:00:00Z",
        "updatedAt": "2026-11-23T06:00:00Z",
    }
    request.update(overrides)
    return {"paymentRequest": request}


def settle(body: bytes, status: int = 200, method: str = "POST") -> str | None:
    path = f"/v1/sandbox/payment-requests/{uuid.uuid4()}/settle"
    return mismatch(method, path, status, "application/json", body)


def test_the_check_accepts_a_documented_answer():
    assert settle(envelope(settled())) is None


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (envelope(settled(status="PAID")), 200, "at data.paymentRequest.status"),
        (envelope(settled(amount=25)), 200, "at data.paymentRequest.amount"),
        (envelope(settled(requestId="not-a-uuid")), 200, "at data.paymentRequest.requestId"),
        (envelope(settled(surprise=1)), 200, "at data.paymentRequest"),
        (
            envelope(
                {"paymentRequest": {k: v for k, v in settled()["paymentRequest"].items() if k != "amount"}}
            ),
            200,
            "'amount' is a required property",
        ),
        (b'{"success": false, "code": "NO_SUCH_CODE", "message": "x"}', 404, "at code"),
        (b'{"success": false, "code": "FORBIDDEN", "message": "x"}', 418, "status 418 is not documented"),
    ],
    ids=["enum", "type", "format", "undocumented-key", "missing-key", "error-code", "status"],
)
def test_the_check_names_the_path_status_and_field_that_mismatched(body, status, expected):
    problem = settle(body, status)

    assert problem is not None
    assert f"POST {SETTLE}" in problem and f"answered {status}" in problem
    assert expected in problem


def test_the_check_refuses_undocumented_paths_and_methods():
    assert "not in /v1/openapi.json" in mismatch("GET", "/v1/nowhere", 200, "application/json", b"{}")
    assert "method is not documented" in settle(envelope(settled()), 200, method="PUT")
    # The generic answers to an unknown route or method are fine.
    not_found = b'{"success": false, "code": "RESOURCE_NOT_FOUND", "message": "No such route"}'
    assert mismatch("GET", "/v1/nowhere", 404, "application/json", not_found) is None
    refused = b'{"success": false, "code": "METHOD_NOT_ALLOWED", "message": "x"}'
    assert settle(refused, 405, method="PUT") is None


def test_every_response_of_a_test_goes_through_the_check(api, db, monkeypatch):
    monkeypatch.setattr(check, "mismatch", lambda *args: "drifted")

    with pytest.raises(AssertionError, match="OpenAPI mismatch: drifted"):
        api.get("/healthz")


# What Swagger UI and a generated client (openapi-python-client) make of the document.


def request_bodies():
    """(operationId, media type, media) of every request body of the document."""
    for operations in openapi_document()["paths"].values():
        for operation in operations.values():
            for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
                yield operation["operationId"], media_type, media


def test_every_request_body_has_examples_that_its_own_schema_takes():
    from openapi_schema_validator import OAS30WriteValidator

    components = check._closed(openapi_document()["components"])
    checked = []
    for operation_id, media_type, media in request_bodies():
        if media["schema"].get("format") == "binary":
            continue  # a file
        assert media.get("examples"), (operation_id, media_type)
        validator = OAS30WriteValidator(
            {"allOf": [check._closed(media["schema"])], "components": components},
            format_checker=OAS30WriteValidator.FORMAT_CHECKER,
        )
        for name, example in media["examples"].items():
            errors = [error.message for error in validator.iter_errors(example["value"])]
            assert errors == [], (operation_id, name)
            checked.append((operation_id, name))
    assert len(checked) > 30


def test_the_payment_example_pays_a_beneficiary_only():
    media = openapi_document()["paths"][PAYMENTS]["post"]["requestBody"]["content"]["application/json"]
    example = media["examples"]["beneficiary"]["value"]
    assert {"beneficiaryId", "payee", "cryptoQuote"} & example.keys() == {"beneficiaryId"}
    assert example["amount"] == "25.00" and example["reference"] == "Invoice 42"


def test_tags_come_in_the_order_a_newcomer_meets_them():
    document = openapi_document()
    names = [tag["name"] for tag in document["tags"]]
    assert names[:3] == ["auth", "accounts", "payments"] and names[-2:] == ["events", "service"]
    used = {
        tag for operations in document["paths"].values() for o in operations.values() for tag in o["tags"]
    }
    assert used == set(names)


def test_public_routes_state_no_security_at_all():
    """`[{}]` would put them on openapi-python-client's AuthenticatedClient."""
    paths = openapi_document()["paths"]
    for path in ("/healthz", "/readyz", "/.well-known/jwks.json", "/v1/auth/login", "/v1/auth/verify-2fa"):
        for operation in paths[path].values():
            assert operation["security"] == [], path
    assert all(
        operation.get("security") != [{}]
        for operations in paths.values()
        for operation in operations.values()
    )


def test_the_batch_challenge_expiry_is_a_date_time_both_ways():
    sent = schema_of("ScaChallengeRequest")["properties"]["expiresAt"]
    answered = schema_of("ScaChallengeAnswer")["properties"]["expiresAt"]
    assert sent["type"] == answered["type"] == "string"
    assert sent["format"] == answered["format"] == "date-time"


def test_document_files_use_media_types_a_generated_client_supports():
    """openapi-python-client sends and reads files as application/octet-stream; a body
    of only other binary types makes it skip the whole operation. The upload also
    names the types presign accepts."""
    paths = openapi_document()["paths"]
    upload = paths["/v1/documents/local"]["put"]["requestBody"]["content"]
    binary = {"schema": {"type": "string", "format": "binary"}}
    assert upload == {
        media_type: binary for media_type in (*DOCUMENT_CONTENT_TYPES, "application/octet-stream")
    }
    statement = paths["/v1/customers/{customerId}/accounts/{accountId}/statements"]["get"]
    assert next(iter(statement["responses"]["200"]["content"])) == "application/octet-stream"
    for path in (
        "/v1/batch-payments/{batchId}/status-report",
        "/v1/customers/{customerId}/batch-payments/{batchId}/status-report",
    ):
        assert "application/octet-stream" in paths[path]["get"]["responses"]["200"]["content"], path
    for path in ("/v1/batch-payments/files", "/v1/customers/{customerId}/batch-payments/files"):
        assert "application/octet-stream" in paths[path]["post"]["requestBody"]["content"], path
    for path in (
        "/v1/documents/local",
        "/v1/applications/{applicationId}/documents/legal/{documentId}/content",
    ):
        content = paths[path]["get"]["responses"]["200"]["content"]
        assert "application/octet-stream" in content, path


def test_presign_states_which_document_types_each_collection_takes():
    from openapi_schema_validator import OAS30WriteValidator

    components = check._closed(openapi_document()["components"])
    validator = OAS30WriteValidator({"allOf": [schema_of("PresignRequest")], "components": components})

    def upload(collection: str, document_type: str) -> dict:
        return {"collection": collection, "documentType": document_type, "contentType": "application/pdf"}

    assert validator.is_valid(upload("kyc", "PASSPORT"))
    assert validator.is_valid(upload("kyb", "SHAREHOLDER_REGISTER"))
    assert validator.is_valid(upload("kyb", "BANK_STATEMENT"))
    assert not validator.is_valid(upload("kyc", "SHAREHOLDER_REGISTER"))
    assert not validator.is_valid(upload("kyb", "PASSPORT"))


def test_every_idempotency_key_header_states_it_must_be_a_uuid():
    """What the routes enforce (a UUID, else 400), generated clients and fuzzers read here:
    applications included, where schemathesis found the rule unstated."""
    document = openapi_document()
    stated = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "header" and parameter["name"] == "Idempotency-Key":
                    stated[f"{method.upper()} {path}"] = parameter["schema"].get("pattern")

    assert "POST /v1/applications" in stated, stated
    for operation, pattern in stated.items():
        assert pattern and re.search(pattern, str(uuid.uuid4())), operation
        assert not any(re.search(pattern, bad) for bad in ("key-1", "", str(uuid.uuid4()) + "x")), operation


@pytest.mark.parametrize("today", ["2027-01-24", "2027-12-20", "2028-02-01"])
def test_the_monthly_and_clock_examples_sent_as_they_are_pay_three_runs_whatever_today_is(
    api, payer, account, today
):
    """Swagger UI's two dated examples count from today: the payment makes a schedule
    (a later day), and the clock's day has its first three runs paid."""
    from datetime import UTC, datetime

    import time_machine

    from payments.models import ScheduledPayment, ScheduleRun
    from tests.support.factories import SignedIn

    account_url = f"/v1/customers/{account.customer_id}/accounts/{account.id}"
    with time_machine.travel(datetime.fromisoformat(today).replace(hour=12, tzinfo=UTC), tick=False):
        paths = api.get("/v1/openapi.json").json()["paths"]  # what Swagger UI reads, made now
        monthly = paths[PAYMENTS]["post"]["requestBody"]["content"]["application/json"]["examples"]["monthly"]
        clock_media = paths["/v1/sandbox/scheduled-payments/run"]["post"]["requestBody"]["content"]
        clock = clock_media["application/json"]["examples"]["date"]["value"]
        auth = SignedIn(payer.user).access  # signed in on the day travelled to

        made = api.post(
            f"{account_url}/payments",
            monthly["value"],
            format="json",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
            **auth,
        )
        ran = api.post("/v1/sandbox/scheduled-payments/run", clock, format="json", **auth)

    assert made.status_code == 200, made.json()
    schedule = ScheduledPayment.objects.get(id=made.json()["data"]["bankTransfer"]["scheduleId"])
    assert schedule.scheduled_date.isoformat() > today
    assert ran.status_code == 200, ran.json()
    assert ran.json()["data"] == {"date": clock["date"], "paid": 3, "held": 0, "failed": 0}
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 3
