"""Onboarding routes: applications, KYC schema and legal documents.

Every route takes the customer's id_token (an access token is 401) and sees only
the caller's own applications: another customer's, program's or environment's
application answers 404 RESOURCE_NOT_FOUND.
"""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema

from bankapi.api import ScopedAPIView
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.idempotency import HEADER, idempotency_key_parse, stored_response_http
from bankapi.responses import ok, ok_flat, served_as_attachment
from bankapi.roles import Role
from bankapi.schema import envelope, error_responses
from bankapi.scope import access_customer, get_or_not_found, program_for
from bankapi.serializers import validated_body
from onboarding import serializers as io
from onboarding.kyc import kyc_schema_for
from onboarding.selectors import application_of, applications_of, legal_document_of
from onboarding.services.applications import OPERATION as APPLICATION_OPERATION
from onboarding.services.applications import application_submit
from onboarding.services.documents import document_download_presign, document_upload_presign
from onboarding.services.legal import (
    NO_SET_MESSAGE,
    AcceptedDocument,
    legal_accept,
    legal_document_data,
    legal_view,
)
from onboarding.services.ubos import RESET as UBO_RESET
from onboarding.services.ubos import VERIFICATION_EMAIL as UBO_EMAIL
from onboarding.services.ubos import ubo_verification_links_send, ubo_verification_reset
from onboarding.services.verification import verification_status

TAGS = ["onboarding"]
S401 = "UNAUTHORIZED: missing, expired or revoked token, or an access token (these routes take the id_token)."
S403 = "FORBIDDEN: only customer users have applications."
S404_APPLICATION = "RESOURCE_NOT_FOUND: no such application for this customer (another customer's included)."


IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    pattern="^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    description=(
        "Optional UUID, scoped to the customer. A retry with the same key answers the first "
        "application (header `Idempotent-Replayed: true`) instead of creating another; 400 if it was "
        "used with another isCompany or email; 409 while its first request is still running."
    ),
)


class OnboardingView(ScopedAPIView):
    token_use = "id"
    roles = (Role.CUSTOMER,)


class ApplicationCreateView(OnboardingView):
    idempotency_operation = APPLICATION_OPERATION

    @extend_schema(
        tags=TAGS,
        summary="Start onboarding: create an application",
        description=(
            "Creates an application for the signed-in customer: `isCompany` false starts the individual "
            "(KYC) flow, true the company (KYB) flow. workflowStage starts at NEW; primaryApplicant's "
            "names are empty until collected through the KYC schema. `email` defaults to the signed-in "
            "user's e-mail address."
        ),
        parameters=[IDEMPOTENCY_KEY],
        request=io.ApplicationCreateSerializer,
        responses={
            200: OpenApiResponse(
                envelope("ApplicationCreatedResponse", io.ApplicationCreatedSerializer()),
                description="Created. `Idempotent-Replayed: true` on a replay of an earlier answer.",
            ),
            **error_responses(
                400,
                401,
                403,
                409,
                s400="VALIDATION_ERROR (field errors in `errors`), or IDEMPOTENCY_KEY_MISMATCH: the key was "
                "used with another isCompany or email.",
                s401=S401,
                s403=S403,
                s409="IDEMPOTENCY_KEY_IN_PROGRESS: the key's first request is still running.",
            ),
        },
    )
    def post(self, request):
        data = validated_body(io.ApplicationCreateSerializer, request)
        customer = access_customer(self.scope, str(self.scope.customer_id))
        header = request.headers.get(HEADER)
        stored = application_submit(
            customer=customer,
            is_company=data["isCompany"],
            email=data.get("email"),
            user_email=request.auth["email"],
            idempotency_key=idempotency_key_parse(header) if header is not None else None,
        )
        return stored_response_http(stored)


class ApplicationView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="An application and its UBOs",
        responses={
            200: envelope("ApplicationResponse", io.ApplicationDetailSerializer()),
            **error_responses(401, 403, 404, s401=S401, s403=S403, s404=S404_APPLICATION),
        },
    )
    def get(self, request, applicationId: str):
        application = application_of(self.scope, applicationId)
        ubos = application.ubos.all() if application.is_company else []
        return ok(io.ApplicationDetailSerializer({"application": application, "ubos": ubos}).data)


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


LEGAL_DOCUMENT_SET_RESPONSE = envelope("LegalDocumentSetResponse", io.LegalDocumentSetSerializer())
DOCUMENT_KEY = OpenApiParameter(
    "documentKey",
    str,
    OpenApiParameter.QUERY,
    required=False,
    description="Not supported: sending it answers 422 UNSUPPORTED_PARAMETER.",
)


LEGAL_DOCUMENT_SET_RESPONSES = {
    200: LEGAL_DOCUMENT_SET_RESPONSE,
    **error_responses(
        401,
        403,
        404,
        422,
        s401=S401,
        s403=S403,
        s404=S404_APPLICATION,
        s422="UNSUPPORTED_PARAMETER: documentKey is not supported.",
    ),
}


class LegalDocumentsView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="Legal documents to accept",
        description=(
            "The program's current legal document set, filtered by the program's account type, and the "
            "application's current acceptance (null before one). Each document's `hash` is the sha256 of "
            "its content, served at `location` to the same id_token. When the program has no set, "
            "`documents` is null and `message` says so."
        ),
        parameters=[DOCUMENT_KEY],
        responses=LEGAL_DOCUMENT_SET_RESPONSES,
    )
    def get(self, request, applicationId: str):
        application = application_of(self.scope, applicationId)
        if "documentKey" in request.query_params:
            raise ApiError(ErrorCode.UNSUPPORTED_PARAMETER, "The documentKey parameter is not supported.")
        view = legal_view(application)
        data: dict = {
            "documents": None,
            "currentAcceptance": application.legal_documents_acceptance,
            "accountType": view.account_type,
        }
        if view.document_set is None:
            data["message"] = NO_SET_MESSAGE
        else:
            data["documents"] = {
                "provider": view.document_set.provider,
                "documentSetVersion": view.document_set.version,
                "lastUpdated": view.document_set.last_updated,
                "docs": [legal_document_data(application, document) for document in view.documents],
            }
        return ok(io.LegalDocumentSetSerializer(data).data)


class LegalDocumentsAliasView(LegalDocumentsView):
    @extend_schema(
        tags=TAGS,
        summary="Legal documents to accept (alias)",
        description="The same answer as GET /v1/applications/{applicationId}/documents/legal.",
        parameters=[DOCUMENT_KEY],
        responses=LEGAL_DOCUMENT_SET_RESPONSES,
    )
    def get(self, request, applicationId: str):
        return super().get(request, applicationId)


class LegalAcceptView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="Accept legal documents",
        description=(
            "Records the applicant's acceptance on the application. `documentSetVersion` must be the "
            "current set's; each entry of `acceptedDocuments` must name a document of the set for the "
            "program's account type with its current `hash` and `version`, each at most once; every "
            "required document must be included. Any failure answers 400 VALIDATION_ERROR and stores "
            "nothing. A new acceptance replaces the previous one. An application in NEW moves to "
            "IN_PROGRESS."
        ),
        request=io.LegalAcceptSerializer,
        responses={
            200: envelope("LegalAcceptedResponse", io.LegalAcceptedSerializer()),
            **error_responses(400, 401, 403, 404, s401=S401, s403=S403, s404=S404_APPLICATION),
        },
    )
    def post(self, request, applicationId: str):
        application = application_of(self.scope, applicationId)
        data = validated_body(io.LegalAcceptSerializer, request)
        acceptance = legal_accept(
            application=application,
            document_set_version=data["documentSetVersion"],
            accepted=[AcceptedDocument(**entry) for entry in data["acceptedDocuments"]],
        )
        body = {"success": True, "message": "Legal documents accepted.", "acceptance": acceptance}
        return ok(io.LegalAcceptedSerializer(body).data)


class LegalDocumentContentView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="The content of a legal document",
        description=(
            "The document's content as stored, with its media type, as an attachment "
            "(`Content-Disposition: attachment`, `X-Content-Type-Options: nosniff`, "
            "`Content-Security-Policy: default-src 'none'; sandbox`); its sha256 is the document's "
            "`hash`. This path is the `location` the legal documents route gives each document; it stays "
            "valid for documents of earlier sets, so an acceptance's documents can always be read."
        ),
        responses={
            # The generic binary type first: a generated client reads the body as bytes
            # whatever the document's own type (listed after it).
            **{
                (200, media_type): OpenApiResponse(
                    OpenApiTypes.BINARY, description="The document, as an attachment."
                )
                for media_type in ("application/octet-stream", "application/pdf", "text/plain", "*/*")
            },
            **error_responses(
                401,
                403,
                404,
                s401=S401,
                s403=S403,
                s404="RESOURCE_NOT_FOUND: no such document in this program.",
            ),
        },
    )
    def get(self, request, applicationId: str, documentId: str):
        application = application_of(self.scope, applicationId)
        document = legal_document_of(application, documentId)
        response = HttpResponse(bytes(document.content), content_type=document.content_type)
        return served_as_attachment(response, document.key)


class UboActionsView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="Act on UBOs: send verification links, or reset verification",
        description=(
            "UBO_VERIFICATION_EMAIL e-mails each named UBO a signed link to the verification provider's "
            "hosted flow, valid `ttlInSecs` (60 to 604800, default 604800), carrying the redirect URLs "
            "the flow sends the UBO to on success or rejection; the UBO moves to LINK_SENT. The answer "
            "is `{success, action, results: [{uboId, link}]}`. UBO_RESET puts each UBO back in PENDING "
            "and clears its verification so it can resubmit; links sent before stop working. Its answer "
            "is `{success, action, results: [{uboId, status}]}`. Both are accepted in any UBO status. "
            "A uboId that is not a UBO of this application answers 404 and nothing is done."
        ),
        request=io.UboActionSerializer,
        responses={
            200: OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="UboActionAnswer",
                    serializers=[io.UboEmailAnswerSerializer, io.UboResetAnswerSerializer],
                    resource_type_field_name=None,
                ),
                description="The action's results, one per uboId, in the order sent.",
            ),
            **error_responses(
                400,
                401,
                403,
                404,
                s401=S401,
                s403=S403,
                s404="RESOURCE_NOT_FOUND: no such application for this customer, or a uboId that is not one "
                "of its UBOs.",
            ),
        },
    )
    def post(self, request, applicationId: str):
        application = application_of(self.scope, applicationId)
        data = validated_body(io.UboActionSerializer, request)
        if data["action"] == UBO_RESET:
            results = ubo_verification_reset(application=application, ubo_ids=data["uboIds"])
            answer = [{"uboId": result.ubo_id, "status": result.status} for result in results]
            body = {"success": True, "action": UBO_RESET, "results": answer}
            return ok_flat(io.UboResetAnswerSerializer(body).data)
        results = ubo_verification_links_send(
            application=application,
            ubo_ids=data["uboIds"],
            success_url=data.get("redirectSuccessUrl", ""),
            reject_url=data.get("redirectRejectUrl", ""),
            ttl_seconds=data.get("ttlInSecs", io.DEFAULT_LINK_TTL),
            link_base=request.build_absolute_uri("/"),
        )
        answer = [{"uboId": result.ubo_id, "link": result.link} for result in results]
        return ok_flat(
            io.UboEmailAnswerSerializer({"success": True, "action": UBO_EMAIL, "results": answer}).data
        )


INCLUDE_UBOS = OpenApiParameter(
    "includeUbos",
    str,
    OpenApiParameter.QUERY,
    required=False,
    enum=["true", "false"],
    description="`true` adds `ubos`: each UBO's status and steps (`[]` for an individual).",
)


class VerificationStatusView(OnboardingView):
    @extend_schema(
        tags=TAGS,
        summary="Verification status",
        description=(
            "The verification steps the application's provider reports. Every step carries step, "
            "status, rejectionType (RETRY or FINAL when FAILED, else null), comments, docCountry and "
            "docType (empty strings when not applicable). A new application has no steps yet. An "
            "application keeps the provider active when it was created: once the program switches "
            "provider, this answers 409 WEB_TOKEN_PROVIDER_MISMATCH."
        ),
        parameters=[INCLUDE_UBOS],
        responses={
            200: envelope("VerificationStatusResponse", io.VerificationStatusSerializer()),
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                s400="VALIDATION_ERROR: includeUbos is not true or false.",
                s401=S401,
                s403=S403,
                s404=S404_APPLICATION,
                s409="WEB_TOKEN_PROVIDER_MISMATCH: the application's provider is no longer the program's "
                "active one.",
            ),
        },
    )
    def get(self, request, applicationId: str):
        application = application_of(self.scope, applicationId)
        raw = request.query_params.get("includeUbos", "false")
        if raw not in ("true", "false"):
            raise validation_error("includeUbos", "Must be true or false.")
        status = verification_status(application=application, include_ubos=raw == "true")
        data: dict = {"steps": status.steps}
        if status.ubos is not None:
            data["ubos"] = [
                {"uboId": ubo.ubo_id, "status": ubo.status, "steps": ubo.steps} for ubo in status.ubos
            ]
        return ok(io.VerificationStatusSerializer(data).data)


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
