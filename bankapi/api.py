"""Base view every authenticated route derives from: tenant scoping done once."""

from rest_framework.views import APIView

from bankapi.scope import Role, Scope, scope_from_request


class ScopedAPIView(APIView):
    """An APIView whose `self.scope` is the caller's tenant scope.

    Subclasses set `token_use` ("access" or "id") and `roles`; routes that take a
    different token per role override `required_token_use`.
    """

    token_use: str = "access"
    roles: tuple[str, ...] = (Role.CUSTOMER, Role.CUSTODIAN)
    scope: Scope

    def required_token_use(self, claims: dict) -> str:
        return self.token_use

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        self.scope = scope_from_request(request)
