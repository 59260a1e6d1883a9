"""Onboarding routes for the program's legal documents: the set to accept (and its
alias), an acceptance, and each document's content."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from bankapi.errors import ApiError, ErrorCode
from bankapi.http.responses import ok, served_as_attachment
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body
from onboarding import serializers as io
from onboarding.presenters import acceptance_data, legal_document_data
from onboarding.selectors import application_of, legal_document_of
from onboarding.services.legal import NO_SET_MESSAGE, AcceptedDocument, legal_accept, legal_view
from onboarding.views import S401, S403, S404_APPLICATION, TAGS, OnboardingView

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
        acceptance = application.legal_acceptance()
        data: dict = {
            "documents": None,
            "currentAcceptance": None if acceptance is None else acceptance_data(application.id, acceptance),
            "accountType": view.account_type,
        }
        if view.document_set is None:
            data["message"] = NO_SET_MESSAGE
        else:
            data["documents"] = {
                "provider": view.document_set.provider,
                "documentSetVersion": view.document_set.version,
                "lastUpdated": view.document_set.last_updated,
                "docs": [legal_document_data(application.id, document) for document in view.documents],
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
        body = {
            "success": True,
            "message": "Legal documents accepted.",
            "acceptance": acceptance_data(application.id, acceptance),
        }
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
