"""Hostile bodies stop at the door: oversized (413), duplicate keys and unknown fields (400)."""

import http.client
import io
import json
import re
import uuid
from decimal import Decimal

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from bankapi.models import Account
from payments.models import PaymentRequest
from tests.payments.conftest import Snapshot, payments_url
from tests.support.embedded_server import embedded_gunicorn
from tests.support.factories import PASSWORD

LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
OVERSIZED = b'{"padding": "' + b"x" * LIMIT + b'"}'


def api_routes(patterns=None, prefix: str = ""):
    """(path with made-up ids, view class) of every DRF route of the project."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from api_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            view_class = getattr(entry.callback, "cls", None)
            if view_class and issubclass(view_class, APIView):
                path = "/" + re.sub(r"<(?:\w+:)?\w+>", str(uuid.uuid4()), route).lstrip("^").rstrip("$")
                yield path, view_class


def methods_of(view_class) -> list[str]:
    return [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view_class, m)]


def assert_envelope(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is False and body["code"] == code and body["message"]
    return body


def test_the_walk_finds_the_routes_it_must_cover():
    paths = {path.split("/")[2] if path.startswith("/v1/") else path for path, _ in api_routes()}
    assert {"auth", "customers", "capabilities", "sandbox", "/healthz"} <= paths


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
def test_an_oversized_body_is_413_on_every_json_route(client, customer_auth, signed_in):
    headers = customer_auth if signed_in else {}
    checked = 0
    for path, view_class in api_routes():
        # A route may take larger bodies (batches: 10,000 payments), up to its own limit.
        limit = getattr(view_class, "max_body_bytes", LIMIT)
        oversized = OVERSIZED if limit == LIMIT else b'{"padding": "' + b"x" * limit + b'"}'
        for method in methods_of(view_class):
            response = client.generic(
                method.upper(), path, oversized, content_type="application/json", **headers
            )
            body = assert_envelope(response, 413, "PAYLOAD_TOO_LARGE")
            assert str(limit) in body["message"], (method, path)
            checked += 1
    assert checked >= 20


def test_an_oversized_payment_changes_nothing(client, customer_auth, account, beneficiary):
    before = Snapshot()
    padded = {"amount": "1.00", "beneficiaryId": str(beneficiary.id), "reference": "x" * LIMIT}

    response = client.post(
        payments_url(account.customer_id, account.id),
        json.dumps(padded),
        content_type="application/json",
        **customer_auth,
    )

    assert_envelope(response, 413, "PAYLOAD_TOO_LARGE")
    assert before.unchanged()


def chunked(client, path: str, body: bytes, *, decoded_by_server: bool, **headers):
    """A request whose body came chunked: no Content-Length, as a WSGI server hands it on."""
    environ = {
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": io.BytesIO(body),
        "CONTENT_TYPE": "application/json",
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        **headers,
    }
    if decoded_by_server:
        environ["wsgi.input_terminated"] = True
    return client.request(**environ)


@pytest.mark.django_db
def test_an_oversized_chunked_body_is_413(client):
    response = chunked(client, "/v1/auth/login", OVERSIZED, decoded_by_server=True)

    assert_envelope(response, 413, "PAYLOAD_TOO_LARGE")


def test_a_small_chunked_body_is_read_not_taken_as_empty(client, payer):
    body = json.dumps({"email": payer.email, "password": PASSWORD}).encode()

    response = chunked(
        client,
        "/v1/auth/login",
        body,
        decoded_by_server=True,
        HTTP_X_PROGRAM_ID=str(payer.program_id),
    )

    assert response.status_code == 200, response.content
    assert response.json()["data"]["challenge"] == "SOFTWARE_TOKEN_MFA"


@pytest.mark.django_db
def test_a_chunked_body_the_server_did_not_decode_is_refused_not_read_as_empty(client):
    response = chunked(client, "/v1/auth/login", b'{"email": "a@b.c"}', decoded_by_server=False)

    body = assert_envelope(response, 411, "LENGTH_REQUIRED")
    assert "Content-Length" in body["message"]


@pytest.mark.parametrize(
    "raw",
    [
        '{"amount": "1.00", "amount": "2.00", "reference": "Rent", "beneficiaryId": "%(b)s"}',
        '{"amount": "1.00", "reference": "Rent", "payee": {"name": "A", "name": "B",'
        ' "account": {"type": "uk", "sortCode": "040004", "accountNumber": "12345678"}}}',
        '{"amount": "1.00", "reference": "Rent", "payee": {"name": "A",'
        ' "account": {"type": "uk", "sortCode": "040004", "sortCode": "040005",'
        ' "accountNumber": "12345678"}}}',
    ],
    ids=["top-level", "nested", "two-levels-down"],
)
def test_duplicate_keys_at_any_depth_are_refused(client, customer_auth, account, beneficiary, raw):
    before = Snapshot()

    response = client.post(
        payments_url(account.customer_id, account.id),
        raw % {"b": beneficiary.id},
        content_type="application/json",
        **customer_auth,
    )

    body = assert_envelope(response, 400, "VALIDATION_ERROR")
    assert "duplicate key" in body["errors"][0]["message"]
    assert before.unchanged()


def test_a_duplicate_key_on_a_public_route_is_refused(client, payer):
    email, password = payer.email, PASSWORD
    raw = f'{{"email": "{email}", "password": "wrong", "password": "{password}"}}'

    response = client.post(
        "/v1/auth/login", raw, content_type="application/json", HTTP_X_PROGRAM_ID=str(payer.program_id)
    )

    body = assert_envelope(response, 400, "VALIDATION_ERROR")
    message = "JSON parse error - duplicate key 'password' in an object"
    assert body["errors"] == [{"field": "body", "message": message}]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"feeWaivd": True}, "feeWaivd"),
        (
            {
                "payee": {
                    "name": "Jo Bloggs",
                    "account": {"type": "uk", "sortcode": "040004", "accountNumber": "12345678"},
                }
            },
            "payee.account.sortcode",
        ),
        ({"payee": {"name": "Jo Bloggs", "nickname": "Jo"}}, "payee.nickname"),
    ],
    ids=["top-level", "two-levels-down", "one-level-down"],
)
def test_an_unknown_field_at_any_depth_is_refused_by_name(
    api, customer_auth, account, beneficiary, extra, field
):
    before = Snapshot()
    body = {"amount": "1.00", "reference": "Rent", **extra}
    if "payee" not in extra:
        body["beneficiaryId"] = str(beneficiary.id)

    response = api.post(payments_url(account.customer_id, account.id), body, format="json", **customer_auth)

    answer = assert_envelope(response, 400, "VALIDATION_ERROR")
    assert {"field": field, "message": "Unknown field."} in answer["errors"]
    assert field in answer["message"]
    assert before.unchanged()
    assert Account.objects.get(id=account.id).balance == Decimal("100000.00")
    assert not PaymentRequest.objects.filter(reference="Rent").exists()


def test_an_unknown_field_in_a_list_of_objects_is_named_with_its_index():
    from rest_framework import serializers

    from bankapi.http.serializers import InputSerializer, StrictCharField

    class Line(serializers.Serializer):
        name = StrictCharField()

    class Lines(InputSerializer):
        lines = Line(many=True)

    serializer = Lines(data={"lines": [{"name": "a"}, {"name": "b", "nmae": "c"}]})

    assert not serializer.is_valid()
    assert serializer.errors == {"lines": {1: {"nmae": ["Unknown field."]}}}


def test_an_unknown_field_on_a_public_route_is_refused(api, payer):
    response = api.post(
        "/v1/auth/login",
        {"email": payer.email, "password": PASSWORD, "remember": True},
        format="json",
        HTTP_X_PROGRAM_ID=str(payer.program_id),
    )

    answer = assert_envelope(response, 400, "VALIDATION_ERROR")
    assert answer["errors"] == [{"field": "remember", "message": "Unknown field."}]


@pytest.fixture
def gunicorn(tmp_path):
    """A real gunicorn serving the project on a free port (the embedded default settings)."""
    with embedded_gunicorn(tmp_path) as port:
        yield port


def post_chunked(port: int, body: bytes) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    pieces = (body[i : i + 65536] for i in range(0, len(body), 65536))
    connection.request(
        "POST",
        "/v1/auth/login",
        body=pieces,
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        encode_chunked=True,
    )
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def test_chunked_bodies_through_gunicorn_are_limited_and_read(gunicorn):
    status, body = post_chunked(gunicorn, OVERSIZED)
    assert (status, body["code"]) == (413, "PAYLOAD_TOO_LARGE")

    status, body = post_chunked(gunicorn, b'{"email": "someone@example.com"}')
    # The body was read: only the password is missing, not the e-mail.
    assert (status, body["errors"]) == (400, [{"field": "password", "message": "This field is required."}])
