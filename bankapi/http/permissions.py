"""Route protection from the verified token's claims.

The bearer authentication class (authn) verifies the signature and revocation and
sets `request.auth` to the claims. Here each view declares which token it takes
(`token_use`: access or id, or per role via `required_token_use`) and which roles
(`roles`). A missing or wrong-use token is a 401; a role that may not use the
route is a 403.
"""

from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from bankapi.errors import ApiError, ErrorCode

if TYPE_CHECKING:
    # Not at run time: DRF imports this module while rest_framework.views loads.
    from rest_framework.views import APIView


@runtime_checkable
class TokenRules(Protocol):
    """What a view protected by `TokenRequired` declares (`bankapi.http.api.ScopedAPIView` does)."""

    roles: tuple[str, ...]

    def required_token_use(self, claims: dict[str, Any]) -> str: ...


_DECLARES: dict[type, bool] = {}


def _declares_token_rules(view: "APIView") -> TypeGuard[TokenRules]:
    """`isinstance(view, TokenRules)`, asked once per view class (its rules are
    class attributes: `as_view` sets only names the class already has)."""
    found = _DECLARES.get(type(view))
    if found is None:
        found = _DECLARES[type(view)] = isinstance(view, TokenRules)
    return found


class TokenRequired(BasePermission):
    """The default permission of every DRF view: a view must declare its token rules.

    A view that does not (a plain APIView keeping the default permission) is a
    programming error, caught before production by the test that walks every
    route's view class (tests/kernel/test_token_rules.py).
    """

    def has_permission(self, request: Request, view: "APIView") -> bool:
        if not _declares_token_rules(view):
            raise ImproperlyConfigured(
                f"{type(view).__name__} is protected by TokenRequired but declares no roles and "
                "required_token_use: derive it from bankapi.http.api.ScopedAPIView or set its permissions."
            )
        claims = request.auth
        if not isinstance(claims, dict):
            raise ApiError(ErrorCode.UNAUTHORIZED, "A bearer token is required")
        expected = view.required_token_use(claims)
        if claims.get("token_use") != expected:
            raise ApiError(ErrorCode.UNAUTHORIZED, f"This route takes the {expected} token")
        if claims.get("role") not in view.roles:
            raise ApiError(ErrorCode.FORBIDDEN, "This role may not use this route")
        return True
