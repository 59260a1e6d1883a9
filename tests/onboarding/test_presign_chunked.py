"""A document PUT without Content-Length (Transfer-Encoding: chunked) stores exactly
the bytes sent, within the size limit, or is refused: never 200 with anything
else stored.

Django's test client cannot send a chunked body, so these go through real HTTP
servers on loopback ports: gunicorn, which decodes chunked bodies for the
application, and Django's development server (the live test server runs the
same server as `manage.py runserver`), which does not.
"""

import http.client
import json
import uuid
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from onboarding.services.documents import local_document_url
from tests.support.embedded_server import embedded_gunicorn

LIMIT = 4096
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 16  # 4105 bytes: trimmed per test


def put_chunked(base_url: str, key: str, body: bytes, *, piece: int = 1000) -> tuple[int, dict, bytes]:
    """PUT `body` to a signed upload URL in chunks of `piece` bytes, no Content-Length."""
    url = local_document_url(
        base_url=base_url, method="PUT", key=key, content_type="application/pdf", expires_in=300
    )
    parts = urlsplit(url)
    # Encoded here and sent with the headers in one write: a server that answers
    # before reading the body (the development server's 411) may close the
    # connection while a client sending chunk by chunk is still writing.
    chunks = [body[i : i + piece] for i in range(0, len(body), piece)]
    encoded = b"".join(b"%X\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks) + b"0\r\n\r\n"
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(
            "PUT",
            f"{parts.path}?{parts.query}",
            body=encoded,
            headers={"Content-Type": "application/pdf", "Transfer-Encoding": "chunked"},
        )
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def new_key() -> str:
    return f"kyc/{uuid.uuid4()}/PASSPORT/{uuid.uuid4()}"


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    """gunicorn serving the project on a free port, files kept under its var folder,
    signing URLs with this test process's secret."""
    var = tmp_path_factory.mktemp("gunicorn-var")
    with embedded_gunicorn(var, SECRET_KEY=settings.SECRET_KEY, DOCUMENT_UPLOAD_MAX_BYTES=str(LIMIT)) as port:
        yield f"http://127.0.0.1:{port}/", var / "media"


@pytest.mark.parametrize("size", [LIMIT, 3000, 1], ids=["at-the-limit", "several-chunks", "tiny"])
def test_gunicorn_stores_exactly_the_chunked_bytes(gunicorn, size):
    base_url, media = gunicorn
    key = new_key()
    body = PDF[: max(size, 5)]

    status, _, answer = put_chunked(base_url, key, body)

    assert (status, answer) == (200, b"")
    assert (media / key).read_bytes() == body


@pytest.mark.parametrize("piece", [1000, 65536])
def test_gunicorn_refuses_a_chunked_body_over_the_limit_and_stores_nothing(gunicorn, piece):
    base_url, media = gunicorn
    key = new_key()

    status, _, answer = put_chunked(base_url, key, PDF[: LIMIT + 1], piece=piece)

    assert status == 413
    assert json.loads(answer)["code"] == "PAYLOAD_TOO_LARGE"
    assert not (media / key).exists()


def test_gunicorn_refuses_chunked_bytes_that_are_not_the_declared_type(gunicorn):
    base_url, media = gunicorn
    key = new_key()

    status, _, answer = put_chunked(base_url, key, b"<html><script>alert(1)</script></html>")

    assert status == 400
    assert json.loads(answer)["code"] == "VALIDATION_ERROR"
    assert not (media / key).exists()


def test_the_development_server_refuses_a_chunked_upload_with_411(live_server, local_storage):
    key = new_key()

    status, headers, answer = put_chunked(live_server.url + "/", key, PDF[:3000])

    body = json.loads(answer)
    assert status == 411
    assert headers["Content-Type"] == "application/json"
    assert (body["success"], body["code"]) == (False, "LENGTH_REQUIRED")
    assert "Content-Length" in body["message"]
    assert not (local_storage / key).exists()
