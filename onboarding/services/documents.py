"""Document presign: URLs to upload a KYC/KYB document and to read it back.

With S3 configured (`AWS_STORAGE_BUCKET_NAME`, and `AWS_S3_ENDPOINT_URL` for an
S3-compatible service) the URLs are S3's own presigned URLs, made through the
django-storages S3 backend's boto3 client. Without it (the embedded default) the
URLs are this service's own, signed with the service's secret, and the file is
kept in the default (local file) storage.

Every key is issued to one customer (`DocumentUpload`): a download URL is given
only for a key issued to the path's customer.

Only document formats are accepted (`onboarding.document_formats`), and a file is
kept only when its first bytes match its declared type: this service checks an
upload to its own URLs before storing it; an upload straight to S3 cannot be
seen on its way in, so its first bytes are read back (a ranged GET) before any
download URL is issued, and a mismatching object is deleted. Every download is
an attachment of the declared type, from this service and from S3 alike.
"""

import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from botocore.exceptions import ClientError
from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import storages
from django.db.models import QuerySet

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.http.responses import attachment_disposition
from bankapi.models import Customer
from onboarding.document_formats import (
    DOCUMENT_CONTENT_TYPES,
    OPAQUE_CONTENT_TYPE,
    SIGNATURE_BYTES,
    content_matches,
    download_filename,
    served_content_type,
)
from onboarding.kyc import document_types_for
from onboarding.links import document_url_signature, now_seconds
from onboarding.models import Application, DocumentUpload

LOCAL_BUCKET = "local"
DEFAULT_EXPIRY = 900
MAX_EXPIRY = 3600
LOCAL_PATH = "/v1/documents/local"


@dataclass(frozen=True)
class PresignedUrl:
    url: str
    bucket: str
    key: str
    method: str
    content_type: str | None
    expires_in: int


def s3_configured() -> bool:
    return bool(settings.AWS_STORAGE_BUCKET_NAME)


def expiry_clamp(requested: int | None) -> int:
    return DEFAULT_EXPIRY if requested is None else min(requested, MAX_EXPIRY)


def local_document_url(*, base_url: str, method: str, key: str, content_type: str, expires_in: int) -> str:
    expires_at = now_seconds() + expires_in
    signature = document_url_signature(
        method=method, key=key, content_type=content_type, expires_at=expires_at
    )
    query = urlencode({"key": key, "expires": expires_at, "signature": signature})
    return f"{base_url.rstrip('/')}{LOCAL_PATH}?{query}"


def _s3_client() -> tuple[Any, str]:
    """boto3's S3 client of the configured S3 storage, and its bucket."""
    storage: Any = storages["default"]
    return storage.connection.meta.client, storage.bucket_name


def _presigned(*, method: str, upload: DocumentUpload, expires_in: int, base_url: str) -> tuple[str, str]:
    """(url, bucket) for `method` on the upload's key."""
    key, content_type = upload.key, upload.content_type
    if not s3_configured():
        signed_type = content_type if method == "PUT" else ""
        url = local_document_url(
            base_url=base_url, method=method, key=key, content_type=signed_type, expires_in=expires_in
        )
        return url, LOCAL_BUCKET
    client, bucket = _s3_client()
    if method == "PUT":
        params = {"Bucket": bucket, "Key": key, "ContentType": content_type}
        return client.generate_presigned_url("put_object", Params=params, ExpiresIn=expires_in), bucket
    # S3 itself answers with these headers, so what a customer uploaded is saved,
    # never rendered, whatever Content-Type the object was stored with.
    params = {
        "Bucket": bucket,
        "Key": key,
        "ResponseContentType": served_content_type(content_type),
        "ResponseContentDisposition": attachment_disposition(
            download_filename(upload.document_type, content_type)
        ),
    }
    return client.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in), bucket


def document_upload_presign(
    *,
    customer: Customer,
    application: Application | None,
    collection: str,
    document_type: str,
    content_type: str | None,
    expires_in: int | None,
    base_url: str,
) -> PresignedUrl:
    """Issue a new key to the customer and a URL to PUT the file there."""
    allowed = document_types_for(customer.program, collection)
    if document_type not in allowed:
        raise validation_error(
            "documentType", f"For collection {collection}: one of {', '.join(allowed)} (see the KYC schema)."
        )
    if content_type not in DOCUMENT_CONTENT_TYPES:
        raise validation_error("contentType", f"One of {', '.join(DOCUMENT_CONTENT_TYPES)}.")
    seconds = expiry_clamp(expires_in)
    key = f"{collection}/{customer.id}/{document_type}/{uuid.uuid4()}"
    upload = DocumentUpload.objects.create(
        program_id=customer.program_id,
        sandbox=customer.sandbox,
        customer=customer,
        application=application,
        collection=collection,
        document_type=document_type,
        key=key,
        content_type=content_type,
    )
    url, bucket = _presigned(method="PUT", upload=upload, expires_in=seconds, base_url=base_url)
    return PresignedUrl(url, bucket, key, "PUT", content_type, seconds)


def uploads_of(customer: Customer) -> QuerySet[DocumentUpload]:
    return DocumentUpload.objects.filter(
        program_id=customer.program_id, sandbox=customer.sandbox, customer=customer
    )


def _key_from_s3_url(s3_url: str) -> str:
    """The key of `s3://<bucket>/<key>`, the bucket being this service's."""
    bucket = settings.AWS_STORAGE_BUCKET_NAME if s3_configured() else LOCAL_BUCKET
    prefix = f"s3://{bucket}/"
    if not s3_url.startswith(prefix) or len(s3_url) == len(prefix):
        raise validation_error(
            "s3Url", f"Must be s3://{bucket}/<key>, as the upload answered bucket and key."
        )
    return s3_url[len(prefix) :]


def document_download_presign(
    *,
    customer: Customer,
    collection: str | None,
    key: str | None,
    s3_url: str | None,
    expires_in: int | None,
    base_url: str,
) -> PresignedUrl:
    """A URL to GET a document the customer was issued the key of; else 404."""
    if s3_url is not None:
        key = _key_from_s3_url(s3_url)
    upload = uploads_of(customer).filter(key=key).first()
    if upload is None or (collection is not None and upload.collection != collection):
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Document not found")
    _check_stored(upload, field="s3Url" if s3_url is not None else "key")
    seconds = expiry_clamp(expires_in)
    url, bucket = _presigned(method="GET", upload=upload, expires_in=seconds, base_url=base_url)
    return PresignedUrl(url, bucket, upload.key, "GET", None, seconds)


def _stored_head(key: str) -> bytes | None:
    """The first bytes of the object stored under `key`, or None when there is none."""
    if s3_configured():
        client, bucket = _s3_client()
        try:
            answer = client.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{SIGNATURE_BYTES - 1}")
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                return None
            if code == "InvalidRange":  # an empty object has no first byte
                return b""
            raise
        head: bytes = answer["Body"].read()
        return head
    storage = storages["default"]
    if not storage.exists(key):
        return None
    with storage.open(key, "rb") as stored:
        local_head: bytes = stored.read(SIGNATURE_BYTES)
        return local_head


def _check_stored(upload: DocumentUpload, *, field: str) -> None:
    """404 when nothing was uploaded under the key; when the stored bytes are not of
    the declared type, the object is deleted and the request refused (400)."""
    head = _stored_head(upload.key)
    if head is None:
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Nothing was uploaded under this key.")
    if not content_matches(upload.content_type, head):
        storages["default"].delete(upload.key)
        raise validation_error(
            field, f"The uploaded file is not a {upload.content_type} file: it was removed, upload it again."
        )


def upload_content_type(key: str, sent: str) -> str:
    """The Content-Type an upload to this service's URL is checked and stored as.

    `application/octet-stream` (what a generic HTTP client sends a file as) stands
    for the type presign was asked for; any other value is taken as sent, and the
    URL's signature decides whether it is the signed one.
    """
    if sent != OPAQUE_CONTENT_TYPE or "\x00" in key:
        # A key with a NUL names no upload (this service makes the keys), and
        # PostgreSQL cannot even compare one: the signature check refuses it.
        return sent
    upload = DocumentUpload.objects.filter(key=key).only("content_type").first()
    return upload.content_type if upload is not None else sent


def document_store(*, key: str, content_type: str, body: bytes) -> None:
    """Keep `body` under `key` (a PUT to this service's upload URL, signed for
    `content_type`), only when its first bytes are of that type; else 400 and
    nothing stored."""
    if not content_matches(content_type, body):
        raise validation_error("body", f"The file is not a {content_type} file.")
    storage = storages["default"]
    if storage.exists(key):
        storage.delete(key)
    storage.save(key, ContentFile(body))


def document_open(key: str) -> tuple[File, str, str]:
    """(the stored file, the Content-Type and the file name to serve it with) of a
    key issued by presign and uploaded to this service; else 404."""
    storage = storages["default"]
    upload = DocumentUpload.objects.filter(key=key).first()
    if upload is None or not storage.exists(key):
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "Nothing was uploaded under this key.")
    filename = download_filename(upload.document_type, upload.content_type)
    return storage.open(key, "rb"), served_content_type(upload.content_type), filename
