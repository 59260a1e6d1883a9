"""Documents are identity papers, not web pages: a customer cannot make this
service serve script from its own origin (where the back office lives).

Presign takes document types only, an upload must be of its declared type, and
every download is an attachment the browser saves and never renders."""

import pytest

from onboarding.models import DocumentUpload
from onboarding.services.documents import local_document_url
from tests.onboarding.test_presign import download, local, presign_url, upload
from tests.support.factories_onboarding import Applicant

pytestmark = pytest.mark.usefixtures("local_storage")

SCRIPT = b"<!doctype html><script>fetch('/admin/').then(r => r.text()).then(alert)</script>"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>'

# A genuine start of a file of each accepted type.
SAMPLES = {
    "application/pdf": b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n",
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9",
    "image/png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00",
    "image/heic": b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic\x00\x00\x01\x00meta",
    "image/webp": b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88",
}
EXTENSIONS = {"application/pdf": "pdf", "image/jpeg": "jpg", "image/png": "png", "image/heic": "heic"}
ATTACHMENT_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}


def assert_attachment(response, content_type: str) -> None:
    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"].startswith("attachment;")
    for name, value in ATTACHMENT_HEADERS.items():
        assert response[name] == value, name


@pytest.mark.parametrize(
    "content_type",
    [
        "text/html",
        "image/svg+xml",
        "application/xhtml+xml",
        "text/plain",
        "application/octet-stream",
        "application/pdf; charset=utf-8",
        "APPLICATION/PDF",
        "",
        None,
        7,
    ],
)
def test_presign_takes_document_types_only(api, applicant, customer_id_token, content_type):
    before = DocumentUpload.objects.count()
    body = {"collection": "kyc", "documentType": "PASSPORT", "contentType": content_type}

    response = api.post(presign_url(applicant.customer_id), body, format="json", **customer_id_token)

    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert [error["field"] for error in response.json()["errors"]] == ["contentType"]
    assert "uploadUrl" not in response.content.decode()
    assert DocumentUpload.objects.count() == before


@pytest.mark.parametrize("content_type", list(SAMPLES))
def test_each_document_type_uploads_and_downloads_as_an_attachment(
    api, applicant, customer_id_token, content_type
):
    issued = upload(api, applicant, customer_id_token, contentType=content_type)
    put = api.generic("PUT", local(issued["uploadUrl"]), SAMPLES[content_type], content_type=content_type)

    got = download(api, applicant, customer_id_token, collection="kyc", key=issued["key"])
    response = api.get(local(got["downloadUrl"]))

    assert put.status_code == 200
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == SAMPLES[content_type]
    assert_attachment(response, content_type)
    extension = EXTENSIONS.get(content_type, "webp")
    assert response["Content-Disposition"] == f'attachment; filename="passport.{extension}"'


@pytest.mark.parametrize(
    "declared, body",
    [
        ("application/pdf", SCRIPT),
        ("image/png", SVG),
        ("image/jpeg", b"%PDF-1.7\n" + SCRIPT),
        ("image/webp", b"RIFF\x00\x00\x00\x00WAVE" + SCRIPT),
        ("image/heic", b"\x00\x00\x00\x18ftypisom" + SCRIPT),
        ("application/pdf", b""),
        ("application/pdf", b" %PDF-1.7"),
    ],
    ids=["html-as-pdf", "svg-as-png", "pdf-as-jpeg", "wav-as-webp", "mp4-as-heic", "empty", "leading-space"],
)
def test_an_upload_that_is_not_its_declared_type_is_refused_and_not_stored(
    api, applicant, customer_id_token, local_storage, declared, body
):
    issued = upload(api, applicant, customer_id_token, contentType=declared)

    response = api.generic("PUT", local(issued["uploadUrl"]), body, content_type=declared)

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert response.json()["errors"][0]["field"] == "body"
    assert not (local_storage / issued["key"]).exists()


def test_a_refused_upload_leaves_the_earlier_file_as_it_was(api, applicant, customer_id_token, local_storage):
    issued = upload(api, applicant, customer_id_token)
    api.generic("PUT", local(issued["uploadUrl"]), SAMPLES["application/pdf"], content_type="application/pdf")

    again = api.generic("PUT", local(issued["uploadUrl"]), SCRIPT, content_type="application/pdf")

    assert again.status_code == 400
    assert (local_storage / issued["key"]).read_bytes() == SAMPLES["application/pdf"]


def _stored_before_the_rules(
    applicant: Applicant, local_storage, content_type: str, body: bytes
) -> DocumentUpload:
    """A document kept before types and contents were checked (or put in storage by other means)."""
    record = DocumentUpload.objects.create(
        program_id=applicant.program_id,
        sandbox=True,
        customer_id=applicant.customer_id,
        collection="kyc",
        document_type="PASSPORT",
        key=f"kyc/{applicant.customer_id}/PASSPORT/legacy-{content_type.replace('/', '-')}",
        content_type=content_type,
    )
    path = local_storage / record.key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return record


def test_a_stored_html_file_is_served_as_opaque_bytes_to_save(api, applicant, local_storage):
    record = _stored_before_the_rules(applicant, local_storage, "text/html", SCRIPT)
    url = local_document_url(
        base_url="http://testserver/", method="GET", key=record.key, content_type="", expires_in=60
    )

    response = api.get(local(url))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == SCRIPT
    assert_attachment(response, "application/octet-stream")
    assert response["Content-Disposition"] == 'attachment; filename="passport.bin"'


def test_a_stored_file_not_of_its_type_gets_no_download_url_and_is_removed(
    api, applicant, customer_id_token, local_storage
):
    record = _stored_before_the_rules(applicant, local_storage, "image/svg+xml", SVG)
    body = {"applicationId": applicant.application_id, "collection": "kyc", "key": record.key}

    response = api.post(presign_url(applicant.customer_id), body, format="json", **customer_id_token)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "key"
    assert "downloadUrl" not in response.content.decode()
    assert not (local_storage / record.key).exists()


def test_an_octet_stream_upload_is_kept_as_the_type_presign_was_asked_for(api, applicant, customer_id_token):
    """What a generic HTTP client (a generated one included) sends a file as."""
    issued = upload(api, applicant, customer_id_token, contentType="image/png")
    url = local(issued["uploadUrl"])

    refused = api.generic("PUT", url, SCRIPT, content_type="application/octet-stream")
    put = api.generic("PUT", url, SAMPLES["image/png"], content_type="application/octet-stream")

    assert refused.status_code == 400 and refused.json()["code"] == "VALIDATION_ERROR"
    assert put.status_code == 200
    got = download(api, applicant, customer_id_token, collection="kyc", key=issued["key"])
    response = api.get(local(got["downloadUrl"]))
    assert b"".join(response.streaming_content) == SAMPLES["image/png"]
    assert_attachment(response, "image/png")


def test_an_octet_stream_upload_to_a_url_signed_for_nothing_is_refused(api, applicant, customer_id_token):
    issued = upload(api, applicant, customer_id_token, contentType="application/pdf")
    tampered = local(issued["uploadUrl"]).replace("key=", "key=x", 1)

    put = api.generic("PUT", tampered, SAMPLES["application/pdf"], content_type="application/octet-stream")

    assert put.status_code == 403
