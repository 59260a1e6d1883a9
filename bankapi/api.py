"""Base views every authenticated route derives from: tenant scoping done once."""

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response
from rest_framework.views import APIView

from bankapi.models import Account
from bankapi.pagination import page_body, paginate
from bankapi.responses import ok
from bankapi.scope import Role, Scope, access_account, scope_from_request

PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit", int, OpenApiParameter.QUERY, required=False, description="1 to 200 (default 50)."
    ),
    OpenApiParameter(
        "nextToken", str, OpenApiParameter.QUERY, required=False, description="From the last page."
    ),
]


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


class AccountScopedView(ScopedAPIView):
    """A route under `/v1/customers/{customerId}/accounts/{accountId}/`.

    The account is resolved once, in the caller's scope, before any handler
    runs: an unknown or foreign customer or account answers 404 whatever the
    body or query. Handlers read `self.account`.
    """

    account: Account

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        self.account = access_account(self.scope, kwargs["customerId"], kwargs["accountId"])


class CursorListView(ScopedAPIView):
    """A cursor-paginated list, newest first: `{<items_key>: [...], "nextToken": ...}`.

    A subclass names its rows (`rows()`), how one row is presented
    (`present(row)`), the key of the list in `data` and, when rows are ordered
    by another time than `created_at`, `created_field`. Document its `get` with
    `extend_schema_view(get=extend_schema(...))` and `PAGE_PARAMETERS`.
    """

    items_key: str
    created_field: str = "created_at"

    def rows(self) -> QuerySet:
        raise NotImplementedError

    def present(self, row: Any) -> dict:
        raise NotImplementedError

    def get(self, request, *args, **kwargs) -> Response:
        page = paginate(self.rows(), request.query_params, created_field=self.created_field)
        return ok(page_body(page, self.items_key, self.present))
