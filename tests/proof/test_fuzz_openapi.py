"""Schemathesis against GET /v1/openapi.json, in process through the WSGI app.

Every operation of the document is called with data generated from it, both
valid (positive) and deliberately invalid (negative), with real tokens of every
role and the customer's real ids in the path (a World of
tests/support/factories_kernel.py), so requests get past authentication and
tenancy into each route's own handling. Every answer must:
not be a server error; have a status, content type, headers and body the
document declares for the operation; reject negative data with a 4xx; and not
refuse schema-valid data (a 400 there is an input rule the document does not
state). The refusals of schema-valid data that no schema can state (a rule
between two values, the account's or the day's rules, an object the server must
have issued) are allowed in UNSTATABLE, per operation, status and field or
error code, each with its reason.

Bounded for CI: `FUZZ_MAX_EXAMPLES` examples per operation (default 25). Each
operation runs in its own rolled-back transaction. Figures are printed at the end.
It takes minutes, so CI runs it once, in the PostgreSQL pass; setting
FUZZ_MAX_EXAMPLES runs it on SQLite too.
"""

import os
import re
from collections import Counter, defaultdict

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.urls import resolve
from django.urls.exceptions import Resolver404
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.conftest import ON_POSTGRES
from tests.proof.conftest import report_figures

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "25"))

# A document PUT's body is the file itself, in one of the document types the
# document lists; schemathesis generates bytes for the types it does not know.
for _document_type in ("application/pdf", "image/heic"):
    schemathesis.openapi.media_type(_document_type, st.binary(max_size=256))

# What schemathesis counts as accepting schema-valid data by default: a refusal
# that needs state the schema cannot know (401, 403, an unknown id's 404, a state
# conflict's 409, 429) is not the document's fault.
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]

# Refusals of schema-valid input that no schema can state, allowed only for the
# operation named, only with the status named, and only with the fields (of a
# VALIDATION_ERROR) or the error codes listed, each with its reason. Any other refusal of
# schema-valid data is a finding: an input rule the document does not state, to
# be stated there (or a refusal the service should not make).
# A batch's items are checked one by one against the caller's accounts (payer,
# currency, reference rules); initiate refuses a batch none of whose items passes.
BATCH_ITEMS_REASON = "each payment's payer must be an account the caller may pay from, and its rules"
# The pattern states each country's IBAN length and account format; its mod-97
# check digits no pattern can state.
IBAN_REASON = "an IBAN's mod-97 check digits"
# The pattern states a BIC's shape and country; whether it is the bank the IBAN's
# country registry lists for the IBAN's bank code compares two values against data.
BIC_REASON = "a BIC must be the bank its IBAN's national bank registry lists for the IBAN's bank code"
DOCUMENT_KEY_REASON = "documentKey is declared only to say that sending it is refused"
CARDHOLDERS_REASON = "cardholders are a capability of the program, not of the request"
# A pain.001 body is a string to a JSON Schema: whether it is well-formed XML, valid
# against the message's XSD, with matching control figures, only the XSD can say. Any
# field of such a refusal is allowed ("*": its element paths are the document's own).
# Whether a payment is within the program's limits and the account's funds is the
# program's settings and the ledger's state at the time, not the request's shape.
MONEY_REASONS = {
    "LIMIT_EXCEEDED": "the program's per-payment and daily limits, and what the account sent today",
    "INSUFFICIENT_FUNDS": "the account's available balance at the time",
}
ISO_DOCUMENT_REASON = "a pain.001 document: its XSD, not a JSON Schema of a string, states its rules"
UNSTATABLE: dict[str, dict[int, dict[str, str]]] = {
    "GET /v1/accounts/{accountId}/fx/quote": {
        400: {
            "currencyOne": "must be a currency the rate table quotes: data an operator edits",
            "currencyTwo": "must differ from currencyOne (a schema cannot compare two parameters) and be "
            "a currency the rate table quotes",
            "amountCurrency": "must equal currencyOne or currencyTwo: a schema cannot compare parameters",
            "valueDate": "must be today or later and a business day: it depends on the day of the request",
        },
    },
    "POST /v1/batch-payments": {
        400: {
            "scaChallenge": "must be a live challenge the server issued to this caller (initiate)",
            "payments": BATCH_ITEMS_REASON,
        },
    },
    "POST /v1/customers/{customerId}/batch-payments": {
        400: {
            "scaChallenge": "must be a live challenge the server issued to this caller (initiate)",
            "payments": BATCH_ITEMS_REASON,
        },
    },
    "POST /v1/batch-payments/files": {400: {"*": ISO_DOCUMENT_REASON}},
    "POST /v1/customers/{customerId}/batch-payments/files": {400: {"*": ISO_DOCUMENT_REASON}},
    "POST /v1/customers/{customerId}/accounts/{accountId}/payments": {
        400: {
            "reference": "its length and characters are the account's rules (GET /v1/capabilities)",
            "currency": "must be the account's own currency",
            "virtualIban": IBAN_REASON,
            "payee.account.iban": IBAN_REASON,
            "payee.account.bic": BIC_REASON,
        },
        422: MONEY_REASONS,
    },
    "POST /v1/customers/{customerId}/accounts/{accountId}/international-transfers": {
        400: {
            "reference": "its length and characters are the account's rules (GET /v1/capabilities)",
            "payee.account.iban": IBAN_REASON,
            "payee.account.bic": BIC_REASON,
        },
        422: MONEY_REASONS,
    },
    "POST /v1/customers/{customerId}/documents/presign": {
        400: {"documentType": "which document types a collection takes is the program's KYC schema"},
    },
    "POST /v1/webhook-endpoints": {
        400: {
            "url": "where its host resolves, and whether each address is public, is the name server's "
            "answer at the time, not the URL's shape"
        },
    },
    "GET /v1/customers/{customerId}/accounts/{accountId}/statements": {
        400: {
            "from": "must be on or before to, at most 365 days before it: a schema cannot compare two "
            "parameters",
            "to": "must be today or earlier: it depends on the day of the request",
        },
    },
    "GET /v1/customers/{customerId}/accounts/{accountId}/balances": {
        400: {"asOf": "must not be in the future: it depends on the moment of the request"},
    },
    "POST /v1/sandbox/scheduled-payments/run": {
        400: {"date": "at most 366 days after today: it depends on the day of the request"},
    },
    "POST /v1/sandbox/test-clocks": {
        400: {"frozenTime": "within 366 days of now, either way: it depends on the moment of the request"},
        422: {"LIMIT_EXCEEDED": "at most SANDBOX_CLOCKS_MAX clocks per program, a setting"},
    },
    "POST /v1/sandbox/test-clocks/{testClockId}/advance": {
        400: {"to": "after the clock's frozenTime and at most 366 days after it: the clock's state"},
    },
    "POST /v1/sandbox/customers": {
        422: {"LIMIT_EXCEEDED": "at most SANDBOX_CUSTOMERS_MAX customers per program in 24 hours, a setting"},
    },
    "POST /v1/sandbox/incoming-payments": {
        400: {
            "creditorIban": "must be the IBAN of an account of the program's sandbox: data, not a shape",
            "currency": "must be the credited account's own currency",
            "debtorIban": IBAN_REASON,
        },
        422: {"LIMIT_EXCEEDED": "a balance past what the ledger's columns hold depends on the balance"},
    },
    "POST /v1/sandbox/card-authorizations/{authorizationId}/clear": {
        400: {"amount": "at most the authorized amount: the authorization's state"},
    },
    "GET /v1/applications/{applicationId}/agreements/legal/docs": {
        422: {"UNSUPPORTED_PARAMETER": DOCUMENT_KEY_REASON},
    },
    "GET /v1/applications/{applicationId}/documents/legal": {
        422: {"UNSUPPORTED_PARAMETER": DOCUMENT_KEY_REASON},
    },
    "POST /v1/applications/{applicationId}/documents/legal/accept": {
        400: {"documentSetVersion": "must be the legal set's current version, a setting of the deployment"},
    },
    "POST /v1/auth/logout": {
        400: {"access_token": "must repeat the bearer the request is sent with"},
    },
    "POST /v1/customers/{customerId}/accounts/{accountId}/cardholders": {
        422: {"NOT_SUPPORTED": CARDHOLDERS_REASON},
    },
    "POST /v1/customers/{customerId}/accounts/{accountId}/cards/{cardId}/cardholders": {
        422: {"NOT_SUPPORTED": CARDHOLDERS_REASON},
    },
    "POST /v1/customers/{customerId}/accounts/{accountId}/cards/{cardId}/secure": {
        422: {"NOT_SUPPORTED": "the confirmation methods offered are the program's and the user's"},
    },
    "POST /v1/customers/{customerId}/accounts/{accountId}/cards/{cardId}/secure/passkey-challenge": {
        422: {"NOT_SUPPORTED": "a passkey challenge needs a user with a registered passkey"},
    },
}
# An Idempotency-Key already used (in this run) with another body is refused.
IDEMPOTENCY_REASON = "a key already used with another body"
# Every list's nextToken is opaque: only a token the server issued is valid, and
# its shape (the documented pattern) says nothing of its signature.
NEXT_TOKEN_REASON = "an opaque cursor: only one the server issued is valid"


def _unstatable(schema) -> dict[str, dict[int, dict[str, str]]]:
    allowed: dict[str, dict[int, dict[str, str]]] = {}
    for label, table in UNSTATABLE.items():
        for status, keys in table.items():
            allowed.setdefault(label, {})[status] = dict(keys)
    for result in schema.get_all_operations():
        operation = result.ok()
        if any(parameter.name == "nextToken" for parameter in operation.query):
            allowed.setdefault(operation.label, {}).setdefault(400, {})["nextToken"] = NEXT_TOKEN_REASON
        if any(parameter.name == "Idempotency-Key" for parameter in operation.headers):
            allowed.setdefault(operation.label, {}).setdefault(400, {})["IDEMPOTENCY_KEY_MISMATCH"] = (
                IDEMPOTENCY_REASON
            )
    return allowed


def _config(allowed: dict[str, dict[int, dict[str, str]]]) -> SchemathesisConfig:
    return SchemathesisConfig.from_dict(
        {
            # Undeclared query parameters and headers are ignored, as HTTP APIs do; the
            # negative data that matters is in the declared ones and in bodies.
            "generation": {"mode": "all", "max-examples": MAX_EXAMPLES, "allow-extra-parameters": False},
            "checks": {"positive_data_acceptance": {"expected-statuses": ACCEPTED}},
            # Only the statuses UNSTATABLE names, per operation; the test then checks
            # the code or fields of each such refusal.
            "operations": [
                {
                    "include-name": label,
                    "checks": {
                        "positive_data_acceptance": {
                            "expected-statuses": ACCEPTED + [str(status) for status in table]
                        }
                    },
                }
                for label, table in allowed.items()
            ],
        }
    )


_document = schemathesis.openapi.from_wsgi("/v1/openapi.json", get_wsgi_application())
ALLOWED = _unstatable(_document)
schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", get_wsgi_application(), config=_config(ALLOWED))

_OUTCOMES: dict[str, Counter] = defaultdict(Counter)


def _role_and_use(path: str) -> tuple[str, str] | None:
    """The role and token use the route's view takes (customer first), or None for
    a route that takes no bearer."""
    try:
        view = resolve(path).func.view_class
    except (Resolver404, AttributeError):
        return None
    roles = getattr(view, "roles", None)
    if not roles or not hasattr(view, "required_token_use"):
        return None
    role = next(role for role in ("customer", "custodian", "management") if role in roles)
    return role, view().required_token_use({"role": role})


@pytest.fixture
def _test_transaction_kept(db):
    """Schemathesis calls the WSGI handler itself, whose request signals close the
    database connection (and with it the test's transaction); Django's test client
    disconnects them the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def callers(_test_transaction_kept, world):
    """Headers per (role, token use) and the real ids path parameters take."""
    customer = world.customer.tokens
    custodian = world.custodian.person.tokens
    management = world.management.tokens
    return {
        ("customer", "access"): customer.access_token,
        ("customer", "id"): customer.id_token,
        ("custodian", "access"): custodian.access_token,
        ("custodian", "id"): custodian.id_token,
        ("management", "id"): management.id_token,
        ("management", "access"): management.access_token,
    }, world.customer_ids


@pytest.mark.skipif(
    not ON_POSTGRES and "FUZZ_MAX_EXAMPLES" not in os.environ,
    reason="slow: runs once, in the PostgreSQL pass (set DATABASE_URL, or FUZZ_MAX_EXAMPLES for SQLite)",
)
@schema.parametrize()
@settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_every_operation_answers_as_documented(case, callers, world):
    tokens, ids = callers
    for name in list(case.path_parameters or {}):
        if name in ids:
            case.path_parameters[name] = ids[name]
    caller = _role_and_use(case.formatted_path)
    headers = {}
    if caller is not None:
        headers["Authorization"] = f"Bearer {tokens[caller]}"
        if caller[0] == "management" and case.query is not None and "programId" not in case.query:
            case.query["programId"] = str(world.consumer.id)
    if case.operation.path.startswith("/v1/auth/") and case.headers is not None:
        case.headers.setdefault("x-program-id", str(world.consumer.id))
    response = case.call(headers=headers)
    _OUTCOMES[f"{case.method} {case.operation.path}"][response.status_code] += 1
    if _header_outside_its_pattern(case):
        # Schemathesis' coverage phase sends, as "positive", a header value its
        # documented pattern excludes (Idempotency-Key: 0): not schema-valid data,
        # so its refusal says nothing about the document.
        case.validate_response(response, headers=headers, excluded_checks=[positive_data_acceptance])
        return
    case.validate_response(response, headers=headers)
    _refusal_is_unstatable(case, response)


def _header_outside_its_pattern(case) -> bool:
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return False
    for parameter in case.operation.headers:
        pattern = parameter.definition.get("schema", {}).get("pattern")
        value = (case.headers or {}).get(parameter.name)
        if pattern and isinstance(value, str) and not re.search(pattern, value):
            return True
    return False


def _refusal_is_unstatable(case, response) -> None:
    """A refusal of schema-valid data that UNSTATABLE allows must be the one it names."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return
    allowed = ALLOWED.get(case.operation.label, {}).get(response.status_code)
    if allowed is None:
        return
    if "*" in allowed:
        return
    body = response.json()
    # A VALIDATION_ERROR names its fields; any other refusal, its code.
    named = {error["field"] for error in body.get("errors", [])} or {body.get("code")}
    assert named <= allowed.keys(), (
        f"{case.operation.label} refused schema-valid data with {response.status_code} on {sorted(named)}, "
        f"beyond what no schema can state ({sorted(allowed)}):\n{response.text}\n"
        f"{case.as_curl_command()}"
    )


@pytest.fixture(scope="module", autouse=True)
def _print_outcomes():
    yield
    if not _OUTCOMES:
        return
    width = max(len(name) for name in _OUTCOMES)
    lines = [
        f"{name:{width}}  " + ", ".join(f"{status}x{count}" for status, count in sorted(counts.items()))
        for name, counts in sorted(_OUTCOMES.items())
    ]
    total = sum(sum(counts.values()) for counts in _OUTCOMES.values())
    server_errors = sum(
        count for counts in _OUTCOMES.values() for status, count in counts.items() if status >= 500
    )
    lines.append(
        f"{len(_OUTCOMES)} method and path pairs (documented operations and undeclared-method probes), "
        f"{total} requests, {server_errors} server errors "
        f"(at most {MAX_EXAMPLES} examples per operation and generation mode)"
    )
    report_figures("schemathesis (status x count per operation)", "\n".join(lines))
