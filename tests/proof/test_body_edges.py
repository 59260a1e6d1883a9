"""Bodies at their edges: too large, or without a length (Transfer-Encoding: chunked).

A body without Content-Length was once read by Django as empty: a document PUT
answered 200 and stored 0 bytes. Every route that takes a body, found by walking
the URL configuration (`tests/proof/routes.py`), is held to one rule:

- over its limit, with Content-Length or chunked: 413 PAYLOAD_TOO_LARGE, before
  anything is parsed (a malformed oversized body is 413, not a parse error);
- chunked, where the server decoded it (gunicorn sets `wsgi.input_terminated`):
  read whole, within the limit, so the route acts on exactly the bytes sent;
- chunked, where the server did not (Django's development server): 411
  LENGTH_REQUIRED, never run on an empty body.

Routes whose parsers take something other than JSON (a document, a form, a file)
must also show that a chunked body reaches them whole: each has a case in
`WHOLE_BODY_CASES`, which sends a valid body through `send` and checks what was
done with it. A new such route fails `test_every_non_json_body_route_has_a_case`
until it has one.

Django's test client cannot send a chunked body: these tests hand the WSGI
application what the server would (no Content-Length, the decoded body or the
raw stream). tests/onboarding/test_presign_chunked.py sends real chunked
requests through gunicorn and the development server.
"""

import io
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from bankapi.models import Account
from batches.models import Draft
from bench.pain001 import V09, Instruction, Tx, pain001, scan
from onboarding.links import sandbox_flow_token
from onboarding.models import Application, Ubo
from onboarding.services.documents import local_document_url
from tests.proof.routes import all_routes
from tests.support.factories import CustodianSetup, SignedIn, custodian_with_clients
from tests.support.factories_onboarding import company_application

BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
# A small limit for the routes whose own limit is large, so the oversized bodies stay small.
DOCUMENT_LIMIT = 64 * 1024


def body_limit(view_class: type) -> int | None:
    """The route's limit: its own `max_body_bytes`, else Django's request body limit."""
    return getattr(view_class, "max_body_bytes", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def _takes_json_only(view_class: type) -> bool:
    return all("json" in getattr(parser, "media_type", "") for parser in view_class.parser_classes)


def body_routes() -> list[tuple[str, object]]:
    """(method, route) of every route and method that takes a body."""
    return [
        (method, route)
        for route in all_routes()
        if getattr(route.view_class, "parser_classes", None)
        for method in route.methods
        if method in BODY_METHODS
    ]


def _path(route) -> str:
    return route.path({name: str(uuid.uuid4()) for name in route.parameters})


def send(
    client: Client,
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    *,
    decoded: bool = True,
    headers: dict[str, str] | None = None,
):
    """The request as a WSGI server hands on a chunked body: no Content-Length;
    decoded (`wsgi.input_terminated`) by gunicorn, raw from the development server."""
    path, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_TYPE": content_type,
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": io.BytesIO(body),
        **(headers or {}),
    }
    if decoded:
        environ["wsgi.input_terminated"] = True
    return client.request(**environ)


def _malformed(view_class: type, size: int) -> tuple[bytes, str]:
    """A body of `size` bytes that no parser of the route would take."""
    if _takes_json_only(view_class):
        return b'{"unterminated": "' + b"x" * (size - 18), "application/json"
    media_type = view_class.parser_classes[0].media_type
    return b"\x00" * size, "application/octet-stream" if "*" in media_type else media_type


@pytest.fixture(autouse=True)
def small_document_limit(settings):
    settings.DOCUMENT_UPLOAD_MAX_BYTES = DOCUMENT_LIMIT


def _cases():
    return [pytest.param(method, route, id=f"{method} /{route.pattern}") for method, route in body_routes()]


@pytest.mark.django_db
@pytest.mark.parametrize("method, route", _cases())
def test_a_body_over_the_limit_is_413_before_parsing(client, method, route):
    limit = body_limit(route.view_class)
    assert limit is not None, f"{method} /{route.pattern} reads its body without a limit at the door"
    body, content_type = _malformed(route.view_class, limit + 1)

    with_length = client.generic(method, _path(route), body, content_type=content_type)
    chunked = send(client, method, _path(route), body, content_type)

    for response in (with_length, chunked):
        assert response.status_code == 413, response.content[:200]
        assert response.json()["code"] == "PAYLOAD_TOO_LARGE"
        assert str(limit) in response.json()["message"]


@pytest.mark.django_db
@pytest.mark.parametrize("method, route", _cases())
def test_a_chunked_body_the_server_did_not_decode_is_411(client, method, route):
    body, content_type = _malformed(route.view_class, 100)

    response = send(client, method, _path(route), body, content_type, decoded=False)

    assert response.status_code == 411, response.content[:200]
    assert response.json() | {"message": ""} == {"success": False, "code": "LENGTH_REQUIRED", "message": ""}


# ---- a chunked body reaches the route whole -----------------------------------------

PDF = b"%PDF-1.7\n" + bytes(range(256)) * (DOCUMENT_LIMIT // 256)


@dataclass
class Senders:
    """Who sends the bodies: the payer and its GBP account, a custodian of the same
    program with two funded clients, a company application with its owners."""

    payer: SignedIn
    account: Account
    custodian: CustodianSetup
    company: Application


@pytest.fixture
def senders(program, payer, account, business) -> Senders:
    return Senders(payer, account, custodian_with_clients(program), company_application(business.customer))


def _document_upload(client: Client, senders: Senders, storage: Path, route) -> None:
    for size in (DOCUMENT_LIMIT, 4465, 5):
        key = f"kyc/{uuid.uuid4()}/PASSPORT/{uuid.uuid4()}"
        url = local_document_url(
            base_url="http://testserver/",
            method="PUT",
            key=key,
            content_type="application/pdf",
            expires_in=60,
        )
        body = PDF[:size]

        response = send(client, "PUT", url.removeprefix("http://testserver"), body, "application/pdf")

        assert response.status_code == 200, response.content
        assert (storage / key).read_bytes() == body


def _sandbox_outcome(client: Client, senders: Senders, storage: Path, route) -> None:
    ubo = Ubo.objects.filter(application=senders.company).first()
    token = sandbox_flow_token(ubo, success_url="", reject_url="", expires_at=int(time.time()) + 60)

    response = send(
        client, "POST", route.path({"token": token}), b"outcome=approve", "application/x-www-form-urlencoded"
    )

    assert response.status_code == 200, response.content
    ubo.refresh_from_db()
    assert ubo.status == Ubo.Status.VERIFIED


def _payment_file(client: Client, senders: Senders, storage: Path, route) -> None:
    """A pain.001 of several transactions: the draft holds every one of them."""
    if "customerId" in route.parameters:
        caller, account = senders.payer, senders.account
        path = route.path({"customerId": str(account.customer_id)})
    else:
        caller, account = senders.custodian.person, senders.custodian.accounts[0]
        path = route.path({})
    payer = scan(account.sort_code, account.account_number)
    transactions = [Tx(f"E2E-{n}", f"{n}.00", scan("200000", "55779911")) for n in range(1, 41)]
    body = pain001([Instruction(payer, transactions)], msg_id=f"CHUNKED-{uuid.uuid4().hex[:20]}", version=V09)

    response = send(client, "POST", path, body, "application/xml", headers=caller.access)

    assert response.status_code == 200, response.content
    draft = Draft.objects.get(id=response.json()["requestId"])
    assert draft.payments_count == len(transactions)
    assert [item.end_to_end_id for item in draft.sent_payments()] == [tx.end_to_end_id for tx in transactions]


WHOLE_BODY_CASES: dict[tuple[str, str], Callable[..., None]] = {
    ("PUT", "v1/documents/local"): _document_upload,
    ("POST", "v1/sandbox/ubo-verification/<str:token>"): _sandbox_outcome,
    ("POST", "v1/batch-payments/files"): _payment_file,
    ("POST", "v1/customers/<str:customerId>/batch-payments/files"): _payment_file,
}


def _non_json_body_routes():
    return {
        (method, route.pattern): route
        for method, route in body_routes()
        if not _takes_json_only(route.view_class)
    }


def test_every_non_json_body_route_has_a_case():
    routes = set(_non_json_body_routes())

    missing = routes - set(WHOLE_BODY_CASES)
    assert not missing, (
        f"{sorted(missing)} take a body other than JSON: add a case to WHOLE_BODY_CASES that sends a valid "
        "chunked body and checks the route acted on exactly those bytes"
    )
    assert set(WHOLE_BODY_CASES) == routes


@pytest.fixture
def storage(settings, tmp_path) -> Path:
    settings.AWS_STORAGE_BUCKET_NAME = None
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path},
        },
    }
    return tmp_path


@pytest.mark.parametrize("case", list(WHOLE_BODY_CASES), ids=[" ".join(key) for key in WHOLE_BODY_CASES])
def test_a_chunked_body_reaches_the_route_whole(client, senders, storage, case):
    route = _non_json_body_routes()[case]

    WHOLE_BODY_CASES[case](client, senders, storage, route)
