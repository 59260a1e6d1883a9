"""Route protection from the verified token's claims.

The bearer authentication class (authn) verifies the signature and revocation and
sets `request.auth` to the claims. Here each view declares which token it takes
(`token_use`: access or id, or per role via `required_token_use`) and which roles
(`roles`). A missing or wrong-use token is a 401; a role that may not use the
route is a 403.
"""

from rest_framework.permissions import BasePermission

from bankapi.errors import ApiError, ErrorCode


class TokenRequired(BasePermission):
    def has_permission(self, request, view) -> bool:
        claims = request.auth
        if not isinstance(claims, dict):
            raise ApiError(ErrorCode.UNAUTHORIZED, "A bearer token is required")
        expected = view.required_token_use(claims)
        if claims.get("token_use") != expected:
            raise ApiError(ErrorCode.UNAUTHORIZED, f"This route takes the {expected} token")
        if claims.get("role") not in view.roles:
            raise ApiError(ErrorCode.FORBIDDEN, "This role may not use this route")
        return True
