"""Presign against a real S3 API: moto's standalone server on a loopback port,
driven through django-storages and boto3 exactly as a deployment with
AWS_STORAGE_BUCKET_NAME and AWS_S3_ENDPOINT_URL would be."""

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from tests.support.factories_onboarding import Applicant

BUCKET = "kyc-documents"
ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"
REGION = "us-east-1"
DOCUMENT = b"%PDF-1.7\n" + bytes(range(256)) * 64 + b"\n%%EOF"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint():
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=10)


def _client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )


@pytest.fixture
def s3_storage(settings, moto_endpoint):
    client = _client(moto_endpoint)
    if BUCKET not in {bucket["Name"] for bucket in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=BUCKET)
    settings.AWS_STORAGE_BUCKET_NAME = BUCKET
    settings.AWS_S3_ENDPOINT_URL = moto_endpoint
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": moto_endpoint,
                "access_key": ACCESS_KEY,
                "secret_key": SECRET_KEY,
                "region_name": REGION,
                "signature_version": "s3v4",
                "addressing_style": "path",
            },
        },
    }
    return client


def presign(api, applicant: Applicant, token, body) -> dict:
    response = api.post(
        f"/v1/customers/{applicant.customer_id}/documents/presign", body, format="json", **token
    )
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def http(method: str, url: str, data: bytes | None = None, content_type: str | None = None):
    headers = {"Content-Type": content_type} if content_type else {}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_a_document_put_to_s3_reads_back_byte_for_byte(
    api, applicant, customer_id_token, s3_storage, moto_endpoint
):
    issued = presign(
        api,
        applicant,
        customer_id_token,
        {"collection": "kyc", "documentType": "PASSPORT", "contentType": "application/pdf"},
    )

    assert issued["bucket"] == BUCKET
    assert issued["uploadUrl"].startswith(f"{moto_endpoint}/{BUCKET}/kyc/")
    assert parse_qs(urlsplit(issued["uploadUrl"]).query)["X-Amz-Expires"] == ["900"]
    status, _ = http("PUT", issued["uploadUrl"], DOCUMENT, "application/pdf")
    assert status == 200
    stored = s3_storage.get_object(Bucket=BUCKET, Key=issued["key"])
    assert stored["ContentType"] == "application/pdf"

    download = presign(
        api,
        applicant,
        customer_id_token,
        {"applicationId": applicant.application_id, "collection": "kyc", "key": issued["key"]},
    )
    status, body = http("GET", download["downloadUrl"])

    assert status == 200
    assert body == DOCUMENT
    by_s3_url = presign(
        api,
        applicant,
        customer_id_token,
        {"applicationId": applicant.application_id, "s3Url": f"s3://{BUCKET}/{issued['key']}"},
    )
    assert http("GET", by_s3_url["downloadUrl"]) == (200, DOCUMENT)


def _expected_signature(url: str) -> tuple[str, str]:
    """The SigV4 signature S3 computes for this presigned URL with the bucket's key."""
    parts = urlsplit(url)
    query = {name: values[0] for name, values in parse_qs(parts.query).items()}
    signature = query.pop("X-Amz-Signature")
    request = AWSRequest(method="GET", url=f"{parts.scheme}://{parts.netloc}{parts.path}", params=query)
    request.context["timestamp"] = query["X-Amz-Date"]
    signer = S3SigV4QueryAuth(
        Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION, expires=int(query["X-Amz-Expires"])
    )
    canonical = signer.canonical_request(request)
    return signature, signer.signature(signer.string_to_sign(request, canonical), request)


def test_s3_urls_are_signed_for_the_clamped_expiry(api, applicant, customer_id_token, s3_storage):
    """moto does not enforce presigned expiry, so the test checks what S3 enforces it
    from: X-Amz-Expires is the clamped value and the signature covers it."""
    issued = presign(
        api,
        applicant,
        customer_id_token,
        {"collection": "kyc", "documentType": "PASSPORT", "contentType": "application/pdf"},
    )
    http("PUT", issued["uploadUrl"], DOCUMENT, "application/pdf")

    download = presign(
        api,
        applicant,
        customer_id_token,
        {
            "applicationId": applicant.application_id,
            "collection": "kyc",
            "key": issued["key"],
            "expiresInSeconds": 86400,
        },
    )

    query = parse_qs(urlsplit(download["downloadUrl"]).query)
    assert download["expiresInSeconds"] == 3600
    assert query["X-Amz-Expires"] == ["3600"]
    sent, expected = _expected_signature(download["downloadUrl"])
    assert sent == expected
    longer = download["downloadUrl"].replace("X-Amz-Expires=3600", "X-Amz-Expires=7200")
    assert _expected_signature(longer)[1] != sent


def http_headers(url: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return (
            response.status,
            {name.lower(): value for name, value in response.getheaders()},
            response.read(),
        )


def _uploaded(api, applicant: Applicant, token, content_type: str, body: bytes) -> str:
    issued = presign(
        api, applicant, token, {"collection": "kyc", "documentType": "PASSPORT", "contentType": content_type}
    )
    assert http("PUT", issued["uploadUrl"], body, content_type)[0] == 200
    return issued["key"]


def _download_answer(api, applicant: Applicant, token, key: str):
    body = {"applicationId": applicant.application_id, "collection": "kyc", "key": key}
    return api.post(f"/v1/customers/{applicant.customer_id}/documents/presign", body, format="json", **token)


def test_s3_itself_serves_a_download_as_an_attachment_of_its_declared_type(
    api, applicant, customer_id_token, s3_storage
):
    key = _uploaded(api, applicant, customer_id_token, "application/pdf", DOCUMENT)
    # Whatever the object's stored type, the download URL names the type to answer with.
    s3_storage.copy_object(
        Bucket=BUCKET,
        Key=key,
        CopySource={"Bucket": BUCKET, "Key": key},
        ContentType="text/html",
        MetadataDirective="REPLACE",
    )

    answer = _download_answer(api, applicant, customer_id_token, key)
    status, headers, body = http_headers(answer.json()["data"]["downloadUrl"])

    assert status == 200 and body == DOCUMENT
    assert headers["content-type"] == "application/pdf"
    assert headers["content-disposition"] == 'attachment; filename="passport.pdf"'


@pytest.mark.parametrize(
    "declared, body",
    [
        ("application/pdf", b"<!doctype html><script>alert(document.cookie)</script>"),
        ("image/png", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
        ("image/jpeg", b""),
    ],
    ids=["html-as-pdf", "svg-as-png", "empty"],
)
def test_an_s3_object_not_of_its_declared_type_gets_no_download_url_and_is_deleted(
    api, applicant, customer_id_token, s3_storage, declared, body
):
    """S3 takes the PUT without looking at it: the first bytes are read back (a
    ranged GET) before any download URL is issued."""
    key = _uploaded(api, applicant, customer_id_token, declared, body)

    answer = _download_answer(api, applicant, customer_id_token, key)

    assert answer.status_code == 400
    assert answer.json()["code"] == "VALIDATION_ERROR"
    assert answer.json()["errors"][0]["field"] == "key"
    assert "downloadUrl" not in answer.content.decode()
    assert key not in {item["Key"] for item in s3_storage.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


def test_an_s3_key_with_nothing_uploaded_gets_no_download_url(api, applicant, customer_id_token, s3_storage):
    issued = presign(
        api,
        applicant,
        customer_id_token,
        {"collection": "kyc", "documentType": "PASSPORT", "contentType": "application/pdf"},
    )

    answer = _download_answer(api, applicant, customer_id_token, issued["key"])

    assert answer.status_code == 404
    assert answer.json()["code"] == "RESOURCE_NOT_FOUND"
