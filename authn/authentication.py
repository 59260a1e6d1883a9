from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from authn.tokens import UserLoader, decode_token, user_for_claims
from bankapi.errors import ApiError, ErrorCode
from bankapi.ops.logs import log_context_bind


class BearerAuthentication(BaseAuthentication):
    """`Authorization: Bearer <jwt>`: verifies the token and loads its user.

    `request.auth` becomes the verified claims. Which token a route takes (access
    or id) is checked by `bankapi.http.permissions.TokenRequired`. A view may pass
    `load_user` to read the user together with what it needs next (see
    `authn.tokens.user_for_claims`).
    """

    def __init__(self, load_user: UserLoader | None = None) -> None:
        self.load_user = load_user

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header:
            return None
        if header[0].lower() != b"bearer" or len(header) != 2:
            raise ApiError(ErrorCode.UNAUTHORIZED, "Authorization must be 'Bearer <token>'")
        try:
            token = header[1].decode("ascii")
        except UnicodeDecodeError as exc:
            raise ApiError(ErrorCode.UNAUTHORIZED, "Invalid or expired token") from exc
        claims = decode_token(token)
        user = user_for_claims(claims, self.load_user)
        log_context_bind(user_id=user.id, program_id=claims.get("program"), customer_id=user.customer_id)
        return user, claims

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="bankapi"'


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "authn.authentication.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": (
                "The access_token on account, payment, batch, FX and card routes; the "
                "id_token on onboarding routes, passkey registration and management "
                "batch routes."
            ),
        }
