"""Onboarding routes: the base every one of them derives from, and applications.

Every route takes the customer's id_token (an access token is 401) and sees only
the caller's own applications: another customer's, program's or environment's
application answers 404 RESOURCE_NOT_FOUND. The other routes live by concern:
legal documents in `views_legal`, UBO verification and the verification status
in `views_verification`, the KYC schema and document presigning in
`views_documents`; the routes without a bearer (signed URLs, UBO links) in
`views_public`.
"""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from bankapi.http.api import ScopedAPIView, respond_once
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body
from bankapi.idempotency import HEADER, OwnerKind, idempotency_key_parse
from bankapi.roles import Role
from bankapi.scope import access_customer
from onboarding import serializers as io
from onboarding.selectors import application_of
from onboarding.services.applications import MISMATCH_MESSAGE, application_create, application_fingerprint
from onboarding.services.applications import OPERATION as APPLICATION_OPERATION

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
        is_company, email = data["isCompany"], data.get("email")
        return respond_once(
            program=customer.program,
            sandbox=customer.sandbox,
            owner_kind=OwnerKind.CUSTOMER,
            owner_id=customer.id,
            operation=APPLICATION_OPERATION,
            key=idempotency_key_parse(header) if header is not None else None,
            fingerprint=application_fingerprint(is_company=is_company, email=email),
            checks=lambda: None,
            work=lambda _: application_create(
                customer=customer, is_company=is_company, applicant_email=email or request.auth["email"]
            ),
            serializer=lambda application: io.ApplicationCreatedSerializer({"application": application}).data,
            mismatch_message=MISMATCH_MESSAGE,
        )


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
