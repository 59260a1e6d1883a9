"""Presign on the embedded default: this service's own signed URLs, end to end."""

import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import time_machine

from onboarding.models import Application, DocumentUpload
from tests.support.factories_onboarding import Applicant

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF"


# Files are kept by this service (the embedded default), in a temporary folder.
pytestmark = pytest.mark.usefixtures("local_storage")


def presign_url(customer_id: str) -> str:
    return f"/v1/customers/{customer_id}/documents/presign"


def local(url: str) -> str:
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc) == ("http", "testserver")
    return f"{parts.path}?{parts.query}"


def upload(api, applicant: Applicant, token, **body) -> dict:
    body = {"collection": "kyc", "documentType": "PASSPORT", "contentType": "application/pdf", **body}
    response = api.post(presign_url(applicant.customer_id), body, format="json", **token)
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def download(api, applicant: Applicant, token, **body) -> dict:
    body = {"applicationId": applicant.application_id, **body}
    response = api.post(presign_url(applicant.customer_id), body, format="json", **token)
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def test_a_document_put_to_the_upload_url_reads_back_byte_for_byte(api, applicant, customer_id_token):
    issued = upload(api, applicant, customer_id_token)

    assert issued["method"] == "PUT"
    assert issued["bucket"] == "local"
    assert issued["contentType"] == "application/pdf"
    assert issued["expiresInSeconds"] == 900
    assert issued["key"].startswith(f"kyc/{applicant.customer_id}/PASSPORT/")
    put = api.generic("PUT", local(issued["uploadUrl"]), PDF, content_type="application/pdf")
    assert put.status_code == 200

    got = download(api, applicant, customer_id_token, collection="kyc", key=issued["key"])
    response = api.get(local(got["downloadUrl"]))

    assert set(got) == {"downloadUrl", "bucket", "key", "method", "expiresInSeconds"}
    assert got["method"] == "GET" and got["key"] == issued["key"]
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PDF
    assert response["Content-Type"] == "application/pdf"
    by_s3_url = download(api, applicant, customer_id_token, s3Url=f"s3://local/{issued['key']}")
    assert b"".join(api.get(local(by_s3_url["downloadUrl"])).streaming_content) == PDF


def test_the_upload_is_recorded_for_the_customer(api, applicant, customer_id_token):
    issued = upload(api, applicant, customer_id_token, applicationId=applicant.application_id)

    record = DocumentUpload.objects.get(key=issued["key"])
    assert str(record.customer_id) == applicant.customer_id
    assert str(record.application_id) == applicant.application_id
    assert (record.collection, record.document_type, record.content_type) == (
        "kyc",
        "PASSPORT",
        "application/pdf",
    )


def test_an_upload_must_name_its_content_type(api, applicant, customer_id_token):
    before = DocumentUpload.objects.count()
    body = {"collection": "kyb", "documentType": "CERTIFICATE_OF_INCORPORATION"}

    response = api.post(presign_url(applicant.customer_id), body, format="json", **customer_id_token)

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert [error["field"] for error in response.json()["errors"]] == ["contentType"]
    assert DocumentUpload.objects.count() == before


@pytest.mark.parametrize("requested, granted", [(1, 1), (60, 60), (3600, 3600), (3601, 3600), (86400, 3600)])
def test_expiry_is_clamped_to_an_hour(api, applicant, customer_id_token, requested, granted):
    issued = upload(api, applicant, customer_id_token, expiresInSeconds=requested)

    expires = int(parse_qs(urlsplit(issued["uploadUrl"]).query)["expires"][0])
    assert issued["expiresInSeconds"] == granted
    assert abs(expires - (time.time() + granted)) < 5


def test_an_expired_url_is_refused(api, applicant, customer_id_token):
    issued = upload(api, applicant, customer_id_token, expiresInSeconds=60)
    url = local(issued["uploadUrl"])

    with time_machine.travel(time.time() + 65, tick=False):
        late = api.generic("PUT", url, PDF, content_type="application/pdf")

    assert late.status_code == 403
    assert late.json()["code"] == "FORBIDDEN"
    assert api.generic("PUT", url, PDF, content_type="application/pdf").status_code == 200
    got = download(
        api, applicant, customer_id_token, collection="kyc", key=issued["key"], expiresInSeconds=60
    )
    with time_machine.travel(time.time() + 65, tick=False):
        assert api.get(local(got["downloadUrl"])).status_code == 403


def _with(url: str, **changes) -> str:
    parts = urlsplit(url)
    query = {name: values[0] for name, values in parse_qs(parts.query).items()} | changes
    return f"{parts.path}?{urlencode(query)}"


def test_a_tampered_url_is_refused(api, applicant, customer_id_token, local_storage):
    issued = upload(api, applicant, customer_id_token)
    url = issued["uploadUrl"]
    signature = parse_qs(urlsplit(url).query)["signature"][0]
    expires = int(parse_qs(urlsplit(url).query)["expires"][0])
    other_key = upload(api, applicant, customer_id_token)["key"]

    tampered = [
        _with(url, signature=("0" if signature[0] != "0" else "1") + signature[1:]),
        _with(url, expires=str(expires + 3600)),
        _with(url, expires="soon"),
        _with(url, signature=""),
        urlsplit(url).path,
        _with(url, key=other_key),
    ]
    for attempt in tampered:
        response = api.generic("PUT", attempt, PDF, content_type="application/pdf")
        assert response.status_code == 403, attempt
    assert not any(local_storage.rglob("*-*-*-*-*"))


def test_a_key_holding_a_nul_is_refused_as_tampered_not_a_500(
    api, applicant, customer_id_token, local_storage
):
    issued = upload(api, applicant, customer_id_token)

    response = api.generic(
        "PUT",
        _with(issued["uploadUrl"], key=issued["key"] + "\x00"),
        PDF,
        content_type="application/octet-stream",
    )

    assert response.status_code == 403
    assert not any(local_storage.rglob("*-*-*-*-*"))


def test_a_put_with_another_content_type_is_refused(api, applicant, customer_id_token):
    issued = upload(api, applicant, customer_id_token)

    response = api.generic("PUT", local(issued["uploadUrl"]), PDF, content_type="image/png")

    assert response.status_code == 403


def test_an_upload_url_does_not_download_and_a_download_url_does_not_upload(
    api, applicant, customer_id_token
):
    issued = upload(api, applicant, customer_id_token)
    api.generic("PUT", local(issued["uploadUrl"]), PDF, content_type="application/pdf")
    got = download(api, applicant, customer_id_token, collection="kyc", key=issued["key"])

    assert api.get(local(issued["uploadUrl"])).status_code == 403
    assert api.generic("PUT", local(got["downloadUrl"]), b"x", content_type="").status_code == 403


def test_a_document_over_the_size_limit_is_refused(
    api, applicant, settings, customer_id_token, local_storage
):
    settings.DOCUMENT_UPLOAD_MAX_BYTES = 1024
    issued = upload(api, applicant, customer_id_token)

    too_big = api.generic("PUT", local(issued["uploadUrl"]), PDF[:1025], content_type="application/pdf")
    just_fits = api.generic("PUT", local(issued["uploadUrl"]), PDF[:1024], content_type="application/pdf")

    assert too_big.status_code == 413
    assert too_big.json()["code"] == "PAYLOAD_TOO_LARGE"
    assert just_fits.status_code == 200


def test_a_download_before_any_upload_is_not_found(api, applicant, customer_id_token, local_storage):
    issued = upload(api, applicant, customer_id_token)
    body = {"applicationId": applicant.application_id, "collection": "kyc", "key": issued["key"]}

    before = api.post(presign_url(applicant.customer_id), body, format="json", **customer_id_token)
    api.generic("PUT", local(issued["uploadUrl"]), PDF, content_type="application/pdf")
    got = download(api, applicant, customer_id_token, collection="kyc", key=issued["key"])
    (local_storage / issued["key"]).unlink()

    assert before.status_code == 404
    assert before.json()["code"] == "RESOURCE_NOT_FOUND"
    assert "downloadUrl" not in before.content.decode()
    assert api.get(local(got["downloadUrl"])).status_code == 404


def test_another_customers_key_gets_no_download_url(
    api, applicant, applicant2, customer_id_token, customer2_id_token
):
    issued = upload(api, applicant, customer_id_token)
    body = {"applicationId": applicant2.application_id, "collection": "kyc", "key": issued["key"]}

    response = api.post(presign_url(applicant2.customer_id), body, format="json", **customer2_id_token)
    by_s3_url = api.post(
        presign_url(applicant2.customer_id),
        {"applicationId": applicant2.application_id, "s3Url": f"s3://local/{issued['key']}"},
        format="json",
        **customer2_id_token,
    )

    assert response.status_code == 404
    assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert "downloadUrl" not in response.content.decode()
    assert by_s3_url.status_code == 404


def test_a_download_needs_an_application_of_the_customer(api, applicant, applicant2, customer_id_token):
    issued = upload(api, applicant, customer_id_token)
    path = presign_url(applicant.customer_id)

    other = api.post(
        path,
        {"applicationId": applicant2.application_id, "collection": "kyc", "key": issued["key"]},
        format="json",
        **customer_id_token,
    )
    missing = api.post(path, {"collection": "kyc", "key": issued["key"]}, format="json", **customer_id_token)
    wrong_collection = api.post(
        path,
        {"applicationId": applicant.application_id, "collection": "kyb", "key": issued["key"]},
        format="json",
        **customer_id_token,
    )

    assert other.status_code == 404
    assert missing.status_code == 400
    assert wrong_collection.status_code == 404


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "collection"),
        ({"collection": "kyc"}, "documentType"),
        ({"collection": "passport", "documentType": "PASSPORT"}, "collection"),
        (
            {
                "collection": "kyc",
                "documentType": "CERTIFICATE_OF_INCORPORATION",
                "contentType": "application/pdf",
            },
            "documentType",
        ),
        ({"collection": "kyb", "documentType": "PASSPORT", "contentType": "application/pdf"}, "documentType"),
        (
            {"collection": "kyc", "documentType": "SELFIE_VIDEO", "contentType": "application/pdf"},
            "documentType",
        ),
        ({"collection": "kyc", "documentType": "PASSPORT", "contentType": "pdf"}, "contentType"),
        (
            {"collection": "kyc", "documentType": "PASSPORT", "contentType": "text/plain\r\nX: y"},
            "contentType",
        ),
        ({"collection": "kyc", "documentType": "PASSPORT", "expiresInSeconds": 0}, "expiresInSeconds"),
        ({"collection": "kyc", "documentType": "PASSPORT", "expiresInSeconds": -5}, "expiresInSeconds"),
        ({"collection": "kyc", "documentType": "PASSPORT", "expiresInSeconds": "900"}, "expiresInSeconds"),
        ({"collection": "kyc", "key": "kyc/x", "s3Url": "s3://local/kyc/x", "applicationId": "x"}, "s3Url"),
        ({"key": "kyc/x", "applicationId": "x"}, "collection"),
        ({"s3Url": "https://example.com/kyc/x", "applicationId": "APP"}, "s3Url"),
        (
            {"collection": "kyc", "key": "kyc/x", "documentType": "PASSPORT", "applicationId": "APP"},
            "documentType",
        ),
    ],
)
def test_bad_bodies_are_refused_and_no_key_is_issued(api, applicant, customer_id_token, body, field):
    body = {name: (applicant.application_id if value == "APP" else value) for name, value in body.items()}
    before = DocumentUpload.objects.count()

    response = api.post(presign_url(applicant.customer_id), body, format="json", **customer_id_token)

    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert field in {error["field"] for error in response.json()["errors"]}
    assert DocumentUpload.objects.count() == before


def test_presign_refuses_outsiders_and_the_access_token(
    api, applicant, customer_access_token, customer2_id_token, business_id_token
):
    body = {"collection": "kyc", "documentType": "PASSPORT"}
    path = presign_url(applicant.customer_id)
    before = DocumentUpload.objects.count()

    assert api.post(path, body, format="json", **customer_access_token).status_code == 401
    for outsider in (customer2_id_token, business_id_token):
        response = api.post(path, body, format="json", **outsider)
        assert response.status_code == 404
        assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert DocumentUpload.objects.count() == before


def test_an_upload_naming_another_customers_application_is_not_found(
    api, applicant, applicant2, customer_id_token
):
    before = Application.objects.count(), DocumentUpload.objects.count()
    body = {
        "collection": "kyc",
        "documentType": "PASSPORT",
        "contentType": "application/pdf",
        "applicationId": applicant2.application_id,
    }

    response = api.post(presign_url(applicant.customer_id), body, format="json", **customer_id_token)

    assert response.status_code == 404
    assert (Application.objects.count(), DocumentUpload.objects.count()) == before
