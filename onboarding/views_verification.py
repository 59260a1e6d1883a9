"""Onboarding routes for verification: acting on a company's UBOs (sending their
verification links, resetting them) and the provider's verification status."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema

from bankapi.errors import validation_error
from bankapi.http.responses import ok, ok_flat
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body
from onboarding import serializers as io
from onboarding.selectors import application_of
from onboarding.services.ubos import RESET as UBO_RESET
from onboarding.services.ubos import VERIFICATION_EMAIL as UBO_EMAIL
from onboarding.services.ubos import ubo_verification_links_send, ubo_verification_reset
from onboarding.services.verification import verification_status
from onboarding.views import S401, S403, S404_APPLICATION, TAGS, OnboardingView


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
