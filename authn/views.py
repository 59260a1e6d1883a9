"""The /v1/auth/* routes: sign-in, its challenges, tokens, logout and passkeys.

Every route reads the program from the `x-program-id` header or the `programId`
query parameter (the header wins); management users send neither. A user is
only ever signed in through its own program: any other program, or an unknown
or malformed id, answers 401 INVALID_CREDENTIALS.
"""

import uuid

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import get_authorization_header
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from authn import serializers as io
from authn.authentication import BearerAuthentication
from authn.models import User
from authn.presenters import (
    next_challenge_data,
    signed_in_data,
    totp_setup_data,
)
from authn.services.challenges import SignedIn, program_resolve, user_in_program
from authn.services.login import email_verify, password_change, password_login
from authn.services.throttle import client_address, client_throttle
from authn.services.totp import totp_setup_confirm, totp_setup_start, totp_sign_in
from authn.tokens import ACCESS, ID, tokens_refresh, tokens_revoke_all
from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.http.permissions import TokenRequired
from bankapi.http.responses import ok
from bankapi.http.schema import PROGRAM_ID_HEADER, PROGRAM_ID_QUERY, envelope, error_responses
from bankapi.http.serializers import validated_body
from bankapi.roles import Role

TAGS = ["auth"]
PROGRAM_PARAMETERS = [PROGRAM_ID_HEADER, PROGRAM_ID_QUERY]
S401_CREDENTIALS = (
    "INVALID_CREDENTIALS: wrong credentials or code, a wrong, unknown or malformed program id, or an "
    "invalid, expired, spent or wrong-kind session_token. `retryable` is true while the same "
    "session_token (or, on login, another password) may be tried again."
)
S429_BUSY = (
    "Password checks are deliberately slow and only a few run at once per server: when none "
    "frees within a short wait, 429 with `Retry-After`. Waiting requests are served by their "
    "client address's recent failed sign-ins, fewest first. A request refused so counts in no "
    "e-mail's lockout (the password was not tried), but as one failed attempt of its client "
    "address towards the client throttle; try again."
)
S429_SECOND_FACTOR = (
    "Wrong codes also count per user, across sessions (TOTP codes here and in step-up confirmations, "
    "e-mailed codes at verify-email): five wrong codes within 15 minutes lock the user's codes for "
    "15 minutes, 429 with `Retry-After`, even for the right code. A right code clears the count; "
    "a right password does not."
)


def program_header(request) -> str | None:
    return request.headers.get("x-program-id") or request.query_params.get("programId") or None


def program_of(request) -> uuid.UUID | None:
    return program_resolve(program_header(request))


def optional_bearer(request, token_use: str) -> User | None:
    """The bearer's user on routes where the bearer is optional; wrong-use tokens fail."""
    if request.auth is None:
        return None
    if request.auth.get("token_use") != token_use:
        raise ApiError(ErrorCode.UNAUTHORIZED, f"This route takes the {token_use} token")
    return request.user


class AuthView(APIView):
    """No bearer needed: the body carries the credentials or the session_token."""

    authentication_classes: list = []
    permission_classes = [AllowAny]


class OptionalBearerView(APIView):
    """A bearer may be sent instead of (or beside) the body's proof; if sent it must be valid."""

    authentication_classes = [BearerAuthentication]
    permission_classes = [AllowAny]


class LoginView(AuthView):
    @extend_schema(
        tags=TAGS,
        summary="Sign in with e-mail and password: answers the next challenge, never tokens",
        description=(
            "A correct password answers the user's next challenge, in this order: "
            "NEW_PASSWORD_REQUIRED (POST change-password), EMAIL_VERIFICATION_REQUIRED (a 6-digit "
            "code is e-mailed; POST verify-email), SOFTWARE_TOKEN_MFA (POST verify-2fa; every user "
            "with TOTP gets it, passkeys or not), PASSKEY_REQUIRED (with `fido2options`; POST "
            "verify-passkey), MFA_SETUP (TOTP enrolment unfinished; POST mfa/verify-setup, or "
            "mfa/setup for a new secret), SECURITY_SETUP_REQUIRED (no second factor yet; POST "
            "mfa/setup or passkey/register/start). The NEW_PASSWORD_REQUIRED session_token is not "
            "needed by change-password, which takes the temporary password itself.\n\n"
            "Wrong e-mail and wrong password answer the same 401. Five failures within 15 minutes "
            "lock the (program, e-mail) for 15 minutes: 429 with `Retry-After`, even for the right "
            "password.\n\n" + S429_BUSY
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.LoginInputSerializer,
        responses={
            200: envelope("AuthChallengeResponse", io.ChallengeSerializer()),
            **error_responses(400, 401, 429, s401=S401_CREDENTIALS),
        },
    )
    def post(self, request):
        body = validated_body(io.LoginInputSerializer, request)
        challenge = password_login(
            program=program_header(request),
            email=body["email"],
            password=body["password"],
            client=client_address(request),
        )
        return ok(next_challenge_data(challenge))


class Verify2faView(AuthView):
    @extend_schema(
        tags=TAGS,
        summary="Complete SOFTWARE_TOKEN_MFA with a TOTP code: answers tokens",
        description=(
            "RFC 6238 codes of 6 digits and 30 seconds, one step of clock drift either way; a code "
            "is accepted once. A wrong code answers 401 with `retryable: true`: the session_token "
            "stays usable until it expires or five codes have been tried.\n\n" + S429_SECOND_FACTOR
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.Verify2faInputSerializer,
        responses={
            200: envelope("AuthTokensResponse", io.TokensSerializer()),
            **error_responses(400, 401, 429, s401=S401_CREDENTIALS),
        },
    )
    def post(self, request):
        body = validated_body(io.Verify2faInputSerializer, request)
        with client_throttle(request):
            tokens = totp_sign_in(
                program_id=program_of(request),
                session_token=body["session_token"],
                code=body["totp_code"],
            )
        return ok(signed_in_data(tokens))


class ChangePasswordView(OptionalBearerView):
    @extend_schema(
        tags=TAGS,
        summary="Replace a temporary password: answers the next challenge",
        description=(
            "For users whose password an admin reset. A wrong temporary password answers 401 and "
            "counts towards the login lockout. The new password needs 12 characters and must not "
            "be common, numeric or like the e-mail: otherwise 400 with the reasons. Every earlier "
            "token and unused session_token of the user is revoked.\n\n"
            "The answer is a challenge, never tokens: SECURITY_SETUP_REQUIRED for a user without a "
            "second factor (the usual case). Tokens are never handed out on a password alone, so a "
            "user who already has a second factor gets the challenge of the factor held, SOFTWARE_TOKEN_MFA "
            "or PASSKEY_REQUIRED, whose completion answers the tokens. Otherwise the order is "
            "login's.\n\n"
            "No bearer is needed (a user with a temporary password has no tokens); one sent must be "
            "a valid access token of the same user.\n\n" + S429_BUSY
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.ChangePasswordInputSerializer,
        responses={
            200: envelope("ChangePasswordResponse", io.ChallengeSerializer()),
            **error_responses(
                400,
                401,
                429,
                s401=S401_CREDENTIALS + " UNAUTHORIZED: an invalid bearer, or another user's.",
            ),
        },
    )
    def post(self, request):
        bearer_user = optional_bearer(request, ACCESS)
        body = validated_body(io.ChangePasswordInputSerializer, request)
        return ok(
            next_challenge_data(
                password_change(
                    program=program_header(request),
                    email=body["email"],
                    temporary_password=body["temporary_password"],
                    new_password=body["new_password"],
                    bearer_user=bearer_user,
                    client=client_address(request),
                )
            )
        )


class VerifyEmailView(AuthView):
    @extend_schema(
        tags=TAGS,
        summary="Complete EMAIL_VERIFICATION_REQUIRED with the e-mailed code",
        description=(
            "Marks the e-mail verified and answers the next challenge as login would (typically "
            "SECURITY_SETUP_REQUIRED). A wrong code: 401 with `retryable` while attempts remain.\n\n"
            + S429_SECOND_FACTOR
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.VerifyEmailInputSerializer,
        responses={
            200: envelope("VerifyEmailResponse", io.ChallengeSerializer()),
            **error_responses(400, 401, 429, s401=S401_CREDENTIALS),
        },
    )
    def post(self, request):
        body = validated_body(io.VerifyEmailInputSerializer, request)
        return ok(
            next_challenge_data(
                email_verify(
                    program_id=program_of(request),
                    session_token=body["session_token"],
                    code=body["code"],
                )
            )
        )


class MfaSetupView(OptionalBearerView):
    @extend_schema(
        tags=TAGS,
        summary="Start TOTP enrolment: a new secret and an MFA_SETUP session",
        description=(
            "Takes a SECURITY_SETUP_REQUIRED or MFA_SETUP `session_token` in the body, or the "
            "id_token as bearer. Creates a secret (replacing one not yet confirmed); confirm it "
            "with POST mfa/verify-setup. A user whose TOTP is already confirmed: 409 INVALID_STATE."
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.MfaSetupInputSerializer,
        responses={
            200: envelope("MfaSetupResponse", io.MfaSetupSerializer()),
            **error_responses(
                400,
                401,
                409,
                s401=S401_CREDENTIALS + " UNAUTHORIZED: no session_token and no valid id_token.",
                s409="INVALID_STATE: TOTP is already set up.",
            ),
        },
    )
    def post(self, request):
        bearer_user = optional_bearer(request, ID)
        body = validated_body(io.MfaSetupInputSerializer, request)
        return ok(
            totp_setup_data(
                totp_setup_start(
                    program_id=program_of(request),
                    session_token=body.get("session_token"),
                    bearer_user=bearer_user,
                )
            )
        )


class MfaVerifySetupView(AuthView):
    @extend_schema(
        tags=TAGS,
        summary="Confirm TOTP enrolment with a first code: answers tokens",
        parameters=PROGRAM_PARAMETERS,
        request=io.MfaVerifySetupInputSerializer,
        responses={
            200: envelope("MfaVerifySetupResponse", io.TokensSerializer()),
            **error_responses(400, 401, s401=S401_CREDENTIALS),
        },
    )
    def post(self, request):
        body = validated_body(io.MfaVerifySetupInputSerializer, request)
        return ok(
            signed_in_data(
                totp_setup_confirm(
                    program_id=program_of(request),
                    session_token=body["session_token"],
                    code=body["totp_code"],
                )
            )
        )


class RefreshView(AuthView):
    @extend_schema(
        tags=TAGS,
        summary="Exchange a refresh token for new tokens",
        description=(
            "Refresh tokens live 30 days and are rotated: each is good once. Presenting a token "
            "that was already exchanged revokes every token descending from the same sign-in."
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.RefreshInputSerializer,
        responses={
            200: envelope("RefreshResponse", io.TokensSerializer()),
            **error_responses(
                400, 401, s401="INVALID_CREDENTIALS: unknown, expired, reused or revoked token."
            ),
        },
    )
    def post(self, request):
        body = validated_body(io.RefreshInputSerializer, request)
        program_id = program_of(request)
        user, tokens = tokens_refresh(
            body["refresh_token"], program_id=str(program_id) if program_id else None
        )
        return ok(signed_in_data(SignedIn.of(user, tokens)))


class LogoutView(APIView):
    """Global sign-out with the access token."""

    permission_classes = [TokenRequired]
    token_use = ACCESS
    roles = (Role.CUSTOMER, Role.CUSTODIAN, Role.MANAGEMENT)

    def required_token_use(self, claims: dict) -> str:
        return self.token_use

    @extend_schema(
        tags=TAGS,
        summary="Sign out everywhere",
        description=(
            "`access_token` must be the bearer. Every access, id and refresh token the user holds, "
            "on every device, stops working, and so does every session_token of a sign-in not yet "
            "finished."
        ),
        parameters=PROGRAM_PARAMETERS,
        request=io.LogoutInputSerializer,
        responses={
            200: OpenApiResponse(
                inline_serializer(
                    "LogoutResponse",
                    {
                        "success": serializers.BooleanField(default=True),
                        "data": serializers.JSONField(
                            allow_null=True, default=None, help_text="Always null."
                        ),
                    },
                )
            ),
            **error_responses(
                400,
                401,
                s400="VALIDATION_ERROR: a missing access_token, or one that is not the bearer.",
                s401=(
                    "UNAUTHORIZED: missing, invalid or wrong-use bearer. "
                    "INVALID_CREDENTIALS: another program's id."
                ),
            ),
        },
    )
    def post(self, request):
        body = validated_body(io.LogoutInputSerializer, request)
        _, bearer_token = get_authorization_header(request).split()
        if body["access_token"] != bearer_token.decode("ascii"):
            raise validation_error("access_token", "Must be the access token sent as the bearer.")
        user_in_program(request.user, program_of(request))
        tokens_revoke_all(request.user)
        return ok(None)
