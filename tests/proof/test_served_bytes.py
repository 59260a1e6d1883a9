"""Nothing provided by someone else is rendered on this service's origin.

The origin also serves the back office: an HTML or SVG file it rendered would run
script with a staff member's session. So every route that answers with bytes a
customer (or an operator) provided sends them as an attachment the browser
saves, with `X-Content-Type-Options: nosniff` and `Content-Security-Policy:
default-src 'none'; sandbox`, whatever the bytes and their recorded type.

Routes are found by walking the URL configuration (`tests/proof/routes.py`): a
route and method whose documented success answer is anything but JSON, or that
is left out of the OpenAPI document, must be listed here, either with a case that
serves hostile provided bytes through it (`PROVIDED_BYTES`) or with the reason it
serves only the service's own content (`OWN_CONTENT`). A new route that serves
files fails `test_every_route_serving_non_json_is_listed` until it is.
"""

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.http import HttpResponseBase
from rest_framework.test import APIClient

from onboarding.links import sandbox_flow_token
from onboarding.models import DocumentUpload, LegalDocument, Ubo
from onboarding.services.documents import local_document_url
from tests.batches.conftest import payment
from tests.proof.routes import all_routes
from tests.support.factories_kernel import World
from tests.support.openapi import openapi_document

SCRIPT = b"<!doctype html><script>fetch('/admin/').then(r => r.text()).then(alert)</script>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.cookie)"/>'
JSON = "application/json"
SERVED_BYTES_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}

Case = Callable[[APIClient, World, Path], HttpResponseBase]


def _document_download(api: APIClient, world: World, storage: Path) -> HttpResponseBase:
    """A file kept under a key issued to the customer, recorded as SVG (as before
    types were checked, or put in storage by other means), through its signed URL."""
    customer = world.customer.customer
    upload = DocumentUpload.objects.create(
        program_id=customer.program_id,
        sandbox=True,
        customer_id=customer.id,
        collection="kyc",
        document_type="PASSPORT",
        key=f"kyc/{customer.id}/PASSPORT/served-bytes",
        content_type="image/svg+xml",
    )
    (storage / upload.key).parent.mkdir(parents=True, exist_ok=True)
    (storage / upload.key).write_bytes(SVG)
    url = local_document_url(
        base_url="http://testserver/", method="GET", key=upload.key, content_type="", expires_in=60
    )
    return api.get(url.removeprefix("http://testserver"))


def _legal_document_content(api: APIClient, world: World, storage: Path) -> HttpResponseBase:
    """A legal document an operator stored as an HTML page, read by an applicant."""
    document = LegalDocument.objects.get(
        document_set__program=world.consumer, document_set__is_current=True, key="terms"
    )
    LegalDocument.objects.filter(id=document.id).update(
        content=SCRIPT, content_type="text/html; charset=utf-8"
    )
    return api.get(
        f"/v1/applications/{world.application.id}/documents/legal/{document.id}/content",
        **world.customer.id,
    )


def _statement(format_: str) -> Case:
    def serve(api: APIClient, world: World, storage: Path) -> HttpResponseBase:
        """A statement file: the service's document, holding references customers wrote."""
        account = world.account
        day = time.strftime("%Y-%m-%d", time.gmtime())
        return api.get(
            f"/v1/customers/{account.customer_id}/accounts/{account.id}/statements",
            {"from": day, "to": day, "format": format_},
            **world.customer.access,
        )

    return serve


def _status_report(customer_route: bool) -> Case:
    def serve(api: APIClient, world: World, storage: Path) -> HttpResponseBase:
        """A pain.002 report of a draft: the service's document, holding the payees' names and
        the refusal reasons of what the caller sent (here a name written as markup)."""
        if customer_route:
            auth, payer = world.customer.access, world.account
            url = f"/v1/customers/{payer.customer_id}/batch-payments"
        else:
            auth, payer = world.custodian.person.access, world.custodian.accounts[0]
            url = "/v1/batch-payments"
        item = payment(payer, payee={"name": SCRIPT.decode(), "account": {"type": "uk", "sortCode": "1"}})
        verified = api.post(url, {"action": "verify", "payments": [item]}, format="json", **auth)
        assert verified.status_code == 200, verified.content
        return api.get(f"{url}/{verified.json()['requestId']}/status-report", **auth)

    return serve


# (method, route) -> how to have the service serve its own document (a statement, a
# report) that carries text someone else wrote: it too is a file to save, never a page.
PROVIDED_TEXT: dict[tuple[str, str], Case] = {
    ("GET", "v1/customers/<str:customerId>/accounts/<str:accountId>/statements"): _statement("csv"),
    ("GET", "v1/batch-payments/<str:batchId>/status-report"): _status_report(customer_route=False),
    (
        "GET",
        "v1/customers/<str:customerId>/batch-payments/<str:batchId>/status-report",
    ): _status_report(customer_route=True),
}

# (method, route as written in urls.py) -> how to serve hostile provided bytes through it.
PROVIDED_BYTES: dict[tuple[str, str], Case] = {
    ("GET", "v1/documents/local"): _document_download,
    (
        "GET",
        "v1/applications/<str:applicationId>/documents/legal/<str:documentId>/content",
    ): _legal_document_content,
}
# (method, route) -> why it serves only the service's own content, never provided bytes.
OWN_CONTENT = {
    ("GET", "v1/sandbox/ubo-verification/<str:token>"): "the sandbox provider's page, names escaped",
    ("POST", "v1/sandbox/ubo-verification/<str:token>"): "the sandbox provider's page, or a redirect",
    ("GET", "v1/openapi.json"): "the API description, JSON generated from the code",
    ("GET", "v1/docs"): "Swagger UI over the API description",
    ("GET", "metrics"): "Prometheus counters: numbers and route patterns, never a caller's text",
}


def _serves_non_json(route, method: str, paths: dict) -> bool:
    operation = paths.get(route.display, {}).get(method.lower())
    if operation is None:
        return True  # left out of the document: nothing says what it serves
    for status, response in operation.get("responses", {}).items():
        # A success without content (an empty 200, a redirect) serves nothing.
        if str(status).startswith(("2", "3")) and set(response.get("content", {JSON: None})) != {JSON}:
            return True
    return False


def test_every_route_serving_non_json_is_listed():
    paths = openapi_document()["paths"]
    found = {
        (method, route.pattern)
        for route in all_routes()
        for method in route.methods
        if _serves_non_json(route, method, paths)
    }

    listed = [set(PROVIDED_BYTES), set(PROVIDED_TEXT), set(OWN_CONTENT)]
    unlisted = found - set().union(*listed)
    assert not unlisted, (
        f"{sorted(unlisted)} answer with something other than JSON: list each in PROVIDED_BYTES with a "
        "case serving hostile bytes through it, in PROVIDED_TEXT with a case serving a document that "
        "carries provided text, or in OWN_CONTENT with the reason it serves none"
    )
    assert sum(len(entries) for entries in listed) == len(set().union(*listed))  # no route twice
    # The lists name no route that is gone or now answers JSON only.
    assert set().union(*listed) == found


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


@pytest.mark.parametrize("served", list(PROVIDED_BYTES), ids=[" ".join(key) for key in PROVIDED_BYTES])
def test_provided_bytes_are_served_only_as_an_attachment(api, world, storage, served):
    response = PROVIDED_BYTES[served](api, world, storage)

    assert response.status_code == 200, response.content
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body in (SCRIPT, SVG)  # the hostile bytes themselves came back...
    # ...as a file to save, in a sandbox with nothing allowed, never sniffed into HTML.
    assert response["Content-Disposition"].startswith("attachment;")
    for name, value in SERVED_BYTES_HEADERS.items():
        assert response[name] == value, name
    assert "svg" not in response["Content-Type"]


@pytest.mark.parametrize("served", list(PROVIDED_TEXT), ids=[" ".join(key) for key in PROVIDED_TEXT])
def test_documents_carrying_provided_text_are_served_only_as_an_attachment(api, world, storage, served):
    response = PROVIDED_TEXT[served](api, world, storage)

    assert response.status_code == 200, response.content
    assert response["Content-Disposition"].startswith("attachment;")
    for name, value in SERVED_BYTES_HEADERS.items():
        assert response[name] == value, name
    assert "html" not in response["Content-Type"] and "svg" not in response["Content-Type"]


def test_the_sandbox_page_escapes_provided_names_and_allows_no_script(api, world):
    ubo = Ubo.objects.filter(application=world.company_application).first()
    Ubo.objects.filter(id=ubo.id).update(first_name="<script>alert(1)</script>", last_name='"><svg onload=x>')
    ubo.refresh_from_db()
    token = sandbox_flow_token(ubo, success_url="", reject_url="", expires_at=int(time.time()) + 60)

    response = api.get(f"/v1/sandbox/ubo-verification/{token}")

    page = response.content.decode()
    assert response.status_code == 200
    assert "<script>" not in page and "<svg" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert response["Content-Security-Policy"] == "default-src 'none'"
    assert response["X-Content-Type-Options"] == "nosniff"
