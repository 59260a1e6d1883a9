"""Onboarding routes for KYC and KYB documents: the program's KYC schema (the
fields asked and the document types accepted) and the presigned URLs a customer
uploads and downloads its documents with."""

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema

from bankapi.errors import validation_error
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body
from bankapi.scope import access_customer, get_or_not_found, program_for
from onboarding import serializers as io
from onboarding.kyc import kyc_schema_for
from onboarding.selectors import applications_of
from onboarding.services.documents import document_download_presign, document_upload_presign
from onboarding.views import S401, S403, TAGS, OnboardingView


class KycSchemaView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="The program's KYC schema",
        description=(
            "What the program asks individuals and companies for (`fields`: name, type, required, label) "
            "and which document types they may upload (`documentTypes`, used by the presign route: "
            "`kyc` takes the individual types, `kyb` the company types)."
        ),
        responses={
            200: envelope("KycSchemaResponse", io.KycSchemaSerializer()),
            **error_responses(401, 403, s401=S401, s403=S403),
        },
    )
    def get(self, request):
        return ok(io.KycSchemaSerializer(kyc_schema_for(program_for(self.scope))).data)


class PresignView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="Presigned URL to upload or download a KYC/KYB document",
        description=(
            "The body decides the mode. Upload (no `key` and no `s3Url`): `collection` and "
            "`documentType` (from the KYC schema: individual types for kyc, company types for kyb) are "
            "required, and `contentType`, one of application/pdf, image/jpeg, image/png, image/heic and "
            "image/webp; the answer's `uploadUrl` takes one PUT of the file with the answer's "
            "`contentType` as its Content-Type, within `expiresInSeconds`; `key` names the stored file. "
            "A file whose first bytes are not of its declared type is refused: by this service's upload "
            "URL at once (400, nothing stored); when it went straight to S3, at its download presign "
            "(400, and the object is deleted). "
            "Download (`key` with `collection`, or `s3Url` = `s3://<bucket>/<key>`): `applicationId` is "
            "required and must be one of this customer's applications, and the key one issued to this "
            "customer, with a file uploaded under it (else 404); the answer's `downloadUrl` takes a GET "
            "and serves the file as an attachment of its declared type. URLs need no bearer; expired or "
            "tampered "
            "URLs, or a PUT with another Content-Type, answer 403. Expiry: default 900 seconds, at most "
            "3600 (larger values are clamped). `bucket` is the S3 bucket, or `local` when files are kept "
            "by this service."
        ),
        request=io.PresignSerializer,
        responses={
            200: OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="PresignAnswer",
                    serializers=[
                        envelope("PresignUploadResponse", io.PresignUploadSerializer()),
                        envelope("PresignDownloadResponse", io.PresignDownloadSerializer()),
                    ],
                    resource_type_field_name=None,
                ),
                description="`data` carries uploadUrl (upload) or downloadUrl (download).",
            ),
            **error_responses(
                400,
                401,
                403,
                404,
                s401=S401,
                s403=S403,
                s404="RESOURCE_NOT_FOUND: the customer, the application (download) or the key is not this "
                "customer's.",
            ),
        },
    )
    def post(self, request, customerId: str):
        customer = access_customer(self.scope, customerId)
        data = validated_body(io.PresignSerializer, request)
        base_url = request.build_absolute_uri("/")
        if "key" in data or "s3Url" in data:
            return ok(self._download(customer, data, base_url))
        return ok(self._upload(customer, data, base_url))

    def _upload(self, customer, data: dict, base_url: str) -> dict:
        for field in ("collection", "documentType", "contentType"):
            if field not in data:
                raise validation_error(field, f"{field} is required to upload.")
        application = None
        if "applicationId" in data:
            application = get_or_not_found(
                applications_of(self.scope).filter(customer=customer), data["applicationId"], "Application"
            )
        url = document_upload_presign(
            customer=customer,
            application=application,
            collection=data["collection"],
            document_type=data["documentType"],
            content_type=data.get("contentType"),
            expires_in=data.get("expiresInSeconds"),
            base_url=base_url,
        )
        return io.PresignUploadSerializer(
            {
                "uploadUrl": url.url,
                "bucket": url.bucket,
                "key": url.key,
                "method": url.method,
                "contentType": url.content_type,
                "expiresInSeconds": url.expires_in,
            }
        ).data

    def _download(self, customer, data: dict, base_url: str) -> dict:
        if "key" in data and "s3Url" in data:
            raise validation_error("s3Url", "Send s3Url or collection + key, not both.")
        if "key" in data and "collection" not in data:
            raise validation_error("collection", "collection is required with key.")
        if "applicationId" not in data:
            raise validation_error("applicationId", "applicationId is required to download.")
        if "documentType" in data or "contentType" in data:
            field = "documentType" if "documentType" in data else "contentType"
            raise validation_error(field, f"{field} is not used to download.")
        get_or_not_found(
            applications_of(self.scope).filter(customer=customer), data["applicationId"], "Application"
        )
        url = document_download_presign(
            customer=customer,
            collection=data.get("collection"),
            key=data.get("key"),
            s3_url=data.get("s3Url"),
            expires_in=data.get("expiresInSeconds"),
            base_url=base_url,
        )
        return io.PresignDownloadSerializer(
            {
                "downloadUrl": url.url,
                "bucket": url.bucket,
                "key": url.key,
                "method": url.method,
                "expiresInSeconds": url.expires_in,
            }
        ).data
