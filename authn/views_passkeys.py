"""The passkey routes of sign-in: registering a passkey (with the id_token, or a
SECURITY_SETUP_REQUIRED session) and signing in with one (PASSKEY_REQUIRED)."""

from drf_spectacular.utils import extend_schema

from authn import serializers as io
from authn.presenters import (
    passkey_registered_data,
    passkey_registration_data,
    signed_in_data,
)
from authn.services.passkeys import passkey_registration_complete, passkey_registration_start, passkey_sign_in
from authn.services.throttle import client_throttle
from authn.tokens import ID
from authn.views import (
    PROGRAM_PARAMETERS,
    S401_CREDENTIALS,
    TAGS,
    AuthView,
    OptionalBearerView,
    optional_bearer,
    program_of,
)
from bankapi.http.responses import ok
from bankapi.http.schema import envelope, error_responses
from bankapi.http.serializers import validated_body


class PasskeyRegisterStartView(OptionalBearerView):
    @extend_schema(
        tags=TAGS,
        summary="Start a passkey registration: creation options for the browser",
        description=(
            "Takes the id_token as bearer, or a SECURITY_SETUP_REQUIRED `session_token` in the body. "
            "Binary values are base64url without padding; `timeout` is in milliseconds."
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.PasskeyRegisterStartInputSerializer,
        responses={
            200: envelope("PasskeyRegisterStartResponse", io.PasskeyRegistrationOptionsSerializer()),
            **error_responses(
                400,
                401,
                s401=S401_CREDENTIALS + " UNAUTHORIZED: no session_token and no valid id_token.",
            ),
        },
    )
    def post(self, request):
        bearer_user = optional_bearer(request, ID)
        body = validated_body(io.PasskeyRegisterStartInputSerializer, request)
        return ok(
            passkey_registration_data(
                passkey_registration_start(
                    program_id=program_of(request),
                    session_token=body.get("session_token"),
                    bearer_user=bearer_user,
                    friendly_name=body["friendly_name"],
                )
            )
        )


class PasskeyRegisterCompleteView(OptionalBearerView):
    @extend_schema(
        tags=TAGS,
        summary="Complete a passkey registration with the authenticator's attestation",
        description=(
            "Verifies the attestation against the relying party id and origins and keeps the "
            "passkey. When the registration began from a SECURITY_SETUP_REQUIRED session, the user "
            "has finished security setup and `data` also carries the token response fields. A "
            "failed verification answers 401 INVALID_CREDENTIALS; `retryable: true` means the "
            "ceremony may be run again with the same session_token.\n\n"
            "No bearer is needed (the session_token names the user); an id_token sent as bearer "
            "must be that same user's."
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.PasskeyRegisterCompleteInputSerializer,
        responses={
            200: envelope("PasskeyRegisterCompleteResponse", io.PasskeyRegistrationResultSerializer()),
            **error_responses(
                400, 401, s401=S401_CREDENTIALS + " UNAUTHORIZED: an invalid bearer, or another user's."
            ),
        },
    )
    def post(self, request):
        bearer_user = optional_bearer(request, ID)
        body = validated_body(io.PasskeyRegisterCompleteInputSerializer, request)
        return ok(
            passkey_registered_data(
                passkey_registration_complete(
                    program_id=program_of(request),
                    session_token=body["session_token"],
                    attestation=io.passkey_attestation_of(body["attestation"]),
                    bearer_user=bearer_user,
                )
            )
        )


class VerifyPasskeyView(AuthView):
    @extend_schema(
        tags=TAGS,
        summary="Complete PASSKEY_REQUIRED with a passkey assertion: answers tokens",
        description=(
            "The assertion answers login's `fido2options`. A replayed assertion (a spent challenge, "
            "or a signature count that did not increase) is refused. Five failed passkey sign-ins "
            "of a user within 15 minutes lock passkey sign-in for 15 minutes, and failed sign-ins "
            "from one client count towards its throttle: 429 with `Retry-After`."
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.VerifyPasskeyInputSerializer,
        responses={
            200: envelope("VerifyPasskeyResponse", io.TokensSerializer()),
            **error_responses(400, 401, 429, s401=S401_CREDENTIALS),
        },
    )
    def post(self, request):
        body = validated_body(io.VerifyPasskeyInputSerializer, request)
        with client_throttle(request):
            tokens = passkey_sign_in(
                program_id=program_of(request),
                session_token=body["session_token"],
                assertion=io.passkey_assertion_of(body["assertion"]),
            )
        return ok(signed_in_data(tokens))
