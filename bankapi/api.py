"""Base views every authenticated route derives from: tenant scoping done once."""

import uuid
from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from bankapi.idempotency import StoredResponse, idempotent_call, stored_response_http
from bankapi.models import Account, Program
from bankapi.pagination import DEFAULT_LIMIT, MAX_LIMIT, NEXT_TOKEN_PATTERN, paginate
from bankapi.responses import ok
from bankapi.scope import Role, Scope, access_account, scope_from_request

PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "default": DEFAULT_LIMIT},
        OpenApiParameter.QUERY,
        required=False,
        description=(
            f"Rows per page, from 1 (default {DEFAULT_LIMIT}); more than {MAX_LIMIT} is read as {MAX_LIMIT}."
        ),
    ),
    OpenApiParameter(
        "nextToken",
        {"type": "string", "pattern": NEXT_TOKEN_PATTERN},
        OpenApiParameter.QUERY,
        required=False,
        description=(
            "Opaque: the `nextToken` of the previous page, sent back unchanged. Any other value "
            "answers 400 VALIDATION_ERROR."
        ),
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A typo in a view's token rules fails at import, not as a 500 on a request.
        super().__init_subclass__(**kwargs)
        known = {role for role, _ in Role.CHOICES}
        if cls.token_use not in ("access", "id"):
            raise TypeError(f"{cls.__name__}.token_use must be 'access' or 'id', not {cls.token_use!r}")
        if not isinstance(cls.roles, tuple) or not cls.roles or not set(cls.roles) <= known:
            raise TypeError(f"{cls.__name__}.roles must be a non-empty tuple of {sorted(known)}")

    def required_token_use(self, claims: dict[str, Any]) -> str:
        return self.token_use

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        method = (request.method or "").lower()
        served = method in self.http_method_names and hasattr(self, method)
        if not served or (method == "options" and self.metadata_class is None):
            # 405 before the scope is read: a management caller without programId
            # would otherwise get a 400 for a method the route does not have.
            raise MethodNotAllowed(method.upper())
        self.scope = scope_from_request(request)


class AccountScopedView(ScopedAPIView):
    """A route under `/v1/customers/{customerId}/accounts/{accountId}/`.

    The account is resolved once, in the caller's scope, before any handler
    runs: an unknown or foreign customer or account answers 404 whatever the
    body or query. Handlers read `self.account`.
    """

    account: Account

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.account = access_account(self.scope, kwargs["customerId"], kwargs["accountId"])


class CursorListView(ScopedAPIView):
    """A cursor-paginated list, newest first: `{<items_key>: [...], "nextToken": ...}`.

    A subclass names its rows (`rows()`), the list serializer the page is
    rendered with (the one its OpenAPI response documents, holding the items
    under `items_key` and `nextToken`) and, when rows are ordered by another
    time than `created_at`, `created_field`. Document its `get` with
    `extend_schema_view(get=extend_schema(...))` and `PAGE_PARAMETERS`.
    """

    serializer: type[Serializer]
    items_key: str
    created_field: str = "created_at"

    def rows(self) -> QuerySet:
        raise NotImplementedError

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = paginate(self.rows(), request.query_params, created_field=self.created_field)
        return ok(self.serializer({self.items_key: page.items, "nextToken": page.next_token}).data)


def respond_once(
    *,
    program: Program,
    sandbox: bool,
    owner_kind: str,
    owner_id: uuid.UUID,
    operation: str,
    key: uuid.UUID | None,
    fingerprint: dict,
    work: Callable[[], Any],
    serializer: type[Serializer],
    **options: Any,
) -> HttpResponse:
    """Run a create at most once per idempotency key and answer 200
    `{"success": true, "data": <serializer(result)>}`.

    `work` calls the service and returns its domain result; the answer is
    rendered inside the create's transaction, stored with the key and replayed
    byte for byte on a retry (see `bankapi.idempotency`). `options` go to
    `idempotent_call` (e.g. `mismatch_message`).
    """

    def answer() -> StoredResponse:
        return StoredResponse.rendered(200, {"success": True, "data": serializer(work()).data})

    stored = idempotent_call(
        program=program,
        sandbox=sandbox,
        owner_kind=owner_kind,
        owner_id=owner_id,
        operation=operation,
        key=key,
        fingerprint=fingerprint,
        work=answer,
        **options,
    )
    return stored_response_http(stored)
