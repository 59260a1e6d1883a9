"""The request budget of every API route (DRF's default throttle).

Runs after authentication, so the bearer's claims are verified: a request with
an access or id token spends that token's budget (`REQUEST_BUDGET_PER_TOKEN` a
window), one without a bearer its client address's (`REQUEST_BUDGET_PER_ADDRESS`;
the address as `authn.services.throttle.client_address` reads it, X-Forwarded-For
only through `TRUSTED_PROXY_COUNT` proxies). An invalid bearer is refused (401)
before it could spend anything. Over budget: 429 TOO_MANY_REQUESTS with
`Retry-After`, the seconds until the window ends.
"""

from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

if TYPE_CHECKING:
    # DRF reads this module while `rest_framework.views` is being imported.
    from rest_framework.views import APIView

from authn.services.request_budget import budget_spend
from authn.services.throttle import client_address


def budget_key(request: Request) -> tuple[str, int]:
    """The budget a request spends: its key and limit."""
    claims: Any = request.auth
    jti = claims.get("jti") if isinstance(claims, dict) else None
    if jti:
        return f"token:{jti}", settings.REQUEST_BUDGET_PER_TOKEN
    return f"address:{client_address(request._request)}", settings.REQUEST_BUDGET_PER_ADDRESS


class RequestBudgetThrottle(BaseThrottle):
    """Spend one request of the caller's budget; DRF answers 429 when it is spent."""

    def __init__(self) -> None:
        self.retry_after: float | None = None

    def allow_request(self, request: Request, view: "APIView") -> bool:
        key, limit = budget_key(request)
        self.retry_after = budget_spend(key, limit)
        return self.retry_after is None

    def wait(self) -> float | None:
        return self.retry_after
