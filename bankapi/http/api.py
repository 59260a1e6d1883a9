"""Base views every authenticated route derives from: tenant scoping done once."""

import uuid
from collections.abc import Callable
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.db.models import Model, QuerySet
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from bankapi.http.pagination import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    NEXT_TOKEN_DESCRIPTION,
    NEXT_TOKEN_PATTERN,
    paginate,
)
from bankapi.http.responses import ok
from bankapi.idempotency import (
    Checked,
    Fingerprint,
    FirstUse,
    StoredResponse,
    idempotent_checked_call,
    stored_response_http,
)
from bankapi.models import Account, Customer, Program
from bankapi.rows import JoinedSelect, Part
from bankapi.scope import Role, Scope, access_account, parse_uuid, scope_from_request
from bankapi.tenancy import ACCOUNT_OF_CUSTOMER, CUSTOMERS, OWNED_BY_CUSTOMER, Caller, Term, customers_rule
from bankapi.test_clocks import clock_still_require

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
        description=NEXT_TOKEN_DESCRIPTION,
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
    # The operation (`bankapi.idempotency`) this route's POST makes at most once
    # per Idempotency-Key or idempotencyKey; None for a route that takes no key.
    # Every route that takes a key declares it: the proof suite races duplicates
    # against each route that does, and fails for one that takes a key without it.
    idempotency_operation: str | None = None

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
        if (
            method not in ("get", "head", "options")
            and self.scope.role == Role.CUSTOMER
            and self.scope.sandbox
        ):
            # A customer's writes wait while its test clock advances (reads are served).
            clock_still_require(self.scope.customer_id)


# What of the caller's user only sign-in and account security routes read: left
# to load on first use (and the TOTP secret to decrypt only then).
_USER_DEFERRED = frozenset({"password", "totp_secret", "step_up_pin"})


def _caller_from(customer_row: type[Model] | None) -> Callable[[Callable[[str], str]], str]:
    """FROM the active user of an id, its customer and program, and the account
    named in the path if the tenancy rules give it to a customer user acting for
    its own customer (and `customer_row`'s row of that id if the rules give it
    with that customer). The conditions are the rules of `bankapi.tenancy`, the
    caller's values read from the user's own columns. Parameters: account id,
    customer id, [customer_row id,] user id, True."""

    def text(name: Callable[[str], str]) -> str:
        def table(model: type[Model]) -> str:
            return name(model._meta.db_table)

        user = get_user_model()
        # Where each row the rules name sits in this statement.
        rows: dict[str, tuple[str, type[Model]]] = {"customer": ("c", Customer), "account": ("a", Account)}

        def col(alias: str, model: type[Model], field: str) -> str:
            column = model._meta.get_field(field).column  # type: ignore[union-attr]
            return f"{name(alias)}.{name(str(column))}"

        def term(value: Term) -> str:
            if isinstance(value, Caller):
                return col("u", user, value.attr)
            alias, model = rows[value.name]
            return col(alias, model, value.field)

        own_customers = CUSTOMERS[Role.CUSTOMER]
        u_customer, u_program = col("u", user, "customer"), col("u", user, "program")
        joins = [
            f"FROM {table(user)} {name('u')}",
            f"LEFT JOIN {table(Customer)} {name('c')} ON {col('c', Customer, 'id')} = {u_customer}",
            f"LEFT JOIN {table(Program)} {name('p')} ON {col('p', Program, 'id')} = {u_program}",
            f"LEFT JOIN {table(Account)} {name('a')} ON {col('a', Account, 'id')} = %s "
            f"AND {col('c', Customer, 'id')} = %s AND {own_customers.sql(Customer, 'c', term, name)} "
            f"AND {ACCOUNT_OF_CUSTOMER.sql(Account, 'a', term, name)}",
        ]
        if customer_row is not None:
            joins.append(
                f"LEFT JOIN {table(customer_row)} {name('r')} ON {col('r', customer_row, 'id')} = %s "
                f"AND {OWNED_BY_CUSTOMER.sql(customer_row, 'r', term, name)}"
            )
        joins.append(f"WHERE {col('u', user, 'id')} = %s AND {col('u', user, 'is_active')} = %s")
        return " ".join(joins)

    return text


def preloaded_account(
    scope: Scope, account: Account | None, customer_id: str, account_id: str
) -> Account | None:
    """`account` (read with the caller) if it is the one the path names and the
    tenancy rules give it to the caller with its customer as `access_account`
    would; else None, and the route resolves the account with `access_account`.

    The caller's own customer (`scope.customer`, loaded with the user) is the
    only customer the check knows: a customer user's. Any other caller, or an
    account the statement did not find, takes the queries of `access_account`,
    which apply the same rules and so give the same answer."""
    own, rule = scope.customer, customers_rule(scope.role)
    if (
        account is None
        or own is None
        or rule is None
        or parse_uuid(customer_id) != own.id
        or parse_uuid(account_id) != account.id
        or not rule.holds(own, scope)
        or not ACCOUNT_OF_CUSTOMER.holds(account, scope, {"customer": own})
    ):
        return None
    account.customer = own
    if scope.program is not None:
        account.program = scope.program
    return account


def _with_user_loader(authenticator: BaseAuthentication, load_user: Callable[[uuid.UUID], Any]) -> Any:
    """A new authenticator of the same class reading the user with `load_user`,
    if its class takes one (it then has a `load_user` attribute); else `authenticator`."""
    if not hasattr(authenticator, "load_user"):
        return authenticator
    return cast(Any, type(authenticator))(load_user=load_user)


class AccountScopedView(ScopedAPIView):
    """A route under `/v1/customers/{customerId}/accounts/{accountId}/`.

    The account is resolved once, in the caller's scope, before any handler
    runs: an unknown or foreign customer or account answers 404 whatever the
    body or query. Handlers read `self.account`.

    A customer's own account is read in the query that authenticates the caller
    (the user with its customer and program, see `authn.tokens.user_for_claims`),
    and so may one more row of that customer that the request names
    (`customer_row`, its id from `customer_row_id()`, e.g. a payment's
    beneficiary, named by the parsed body): one statement instead of three.
    Its conditions and the check of its rows in memory (`preloaded_account`)
    are the rules of `bankapi.tenancy`, the ones `access_account` queries with;
    anything not found that way (another customer's account, a custodian's
    caller) is looked up by `access_account`, and answers the same.
    """

    account: Account
    customer_row: type[Model] | None = None
    _selects: dict[type[Model] | None, JoinedSelect] = {}
    _preloaded: tuple[Account | None, Model | None] = (None, None)

    _body_error: Exception | None = None

    def customer_row_id(self) -> uuid.UUID | None:
        """The id of the `customer_row` the request names (e.g. read with
        `body_value`), or None."""
        return None

    def body_value(self, key: str) -> Any:
        """`key` of the parsed body, read while the caller is being read: None if
        the body is not an object. A body that does not parse gives None here and
        raises its error from `body()`, when the route reads its body, so the
        answer is the one it would be had the body been read only then (a
        foreign account's 404 first)."""
        try:
            data = self.request.data
        except Exception as error:  # noqa: BLE001 (whatever it is, raised again by body())
            self._body_error = error
            return None
        return data.get(key) if isinstance(data, dict) else None

    def body(self) -> Any:
        """The parsed request body (`request.data`), or the error parsing it raised."""
        if self._body_error is not None:
            raise self._body_error
        return self.request.data

    def get_authenticators(self) -> list:
        # The bearer authentication (a settings entry, so the kernel does not
        # import the app that provides it) takes `load_user`: it gets one that
        # reads the account too. Other authenticators are left as they are.
        return [
            _with_user_loader(authenticator, self._caller_with_account)
            for authenticator in super().get_authenticators()
        ]

    def _caller_with_account(self, user_id: uuid.UUID) -> Any:
        select = self._selects.get(self.customer_row)
        if select is None:
            parts = [
                Part(get_user_model(), "u", defer=_USER_DEFERRED),
                Part(Customer, "c"),
                Part(Program, "p"),
                Part(Account, "a"),
            ]
            if self.customer_row is not None:
                parts.append(Part(self.customer_row, "r"))
            select = self._selects[self.customer_row] = JoinedSelect(parts, _caller_from(self.customer_row))
        connection = connections[router.db_for_read(Account)]

        def uuid_param(value: uuid.UUID | None) -> Any:
            # Every id here is a UUID primary key, stored the same way.
            return None if value is None else Account._meta.pk.get_db_prep_value(value, connection)

        params = [
            uuid_param(parse_uuid(self.kwargs.get("accountId"))),
            uuid_param(parse_uuid(self.kwargs.get("customerId"))),
        ]
        if self.customer_row is not None:
            params.append(uuid_param(self.customer_row_id()))
        params += [uuid_param(user_id), True]
        rows = select.first(connection, params)
        if rows is None:
            return None
        user, customer, program, account, *row = rows
        # As select_related would: following them costs no query.
        setattr(user, "customer", customer)  # noqa: B010 (a Model, as the reader gives it)
        setattr(user, "program", program)  # noqa: B010
        self._preloaded = (account if isinstance(account, Account) else None, row[0] if row else None)
        return user

    def preloaded_row(self) -> Model | None:
        """The `customer_row` read with the caller, if the route's account is the
        one read with it (None otherwise). Not yet checked: whoever uses it
        confirms it with `bankapi.tenancy.OWNED_BY_CUSTOMER`."""
        account, row = self._preloaded
        return row if account is not None and account is getattr(self, "account", None) else None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        customer_id, account_id = kwargs["customerId"], kwargs["accountId"]
        self.account = preloaded_account(
            self.scope, self._preloaded[0], customer_id, account_id
        ) or access_account(self.scope, customer_id, account_id)


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
        page = paginate(self.rows(), request, created_field=self.created_field)
        return ok(self.serializer({self.items_key: page.items, "nextToken": page.next_token}).data)


def respond_once(
    *,
    program: Program,
    sandbox: bool,
    owner_kind: str,
    owner_id: uuid.UUID,
    operation: str,
    key: uuid.UUID | None,
    fingerprint: Fingerprint,
    checks: Callable[[], Checked],
    work: Callable[[Checked], Any],
    serializer: type[Serializer] | Callable[[Any], Any],
    work_at_once: Callable[[Any, FirstUse | None, Callable[[Any], StoredResponse]], StoredResponse | None]
    | None = None,
    **options: Any,
) -> HttpResponse:
    """Run a create at most once per idempotency key and answer 200
    `{"success": true, "data": <serializer(result)>}`.

    `checks` resolves and checks what the body names, once the key is held
    (see `bankapi.idempotency`); `work` takes what it returned, calls the
    service and returns its domain result (or a `StoredResponse`, answered as
    it is: a request held for approval). `serializer` is a Serializer class,
    or a plain function giving the same data (for the hottest routes, where
    building a serializer costs more than the rest of the answer). The answer is
    rendered inside the create's transaction, stored with the key and replayed
    byte for byte on a retry. `work_at_once(checked, claim, rendered)` is
    `idempotent_checked_call`'s: work that writes and completes the claim in
    one statement, given how its result is answered (`rendered(result)`), or
    None to let `work` run. `options` go to `idempotent_checked_call` (e.g.
    `mismatch_message`).
    """

    def present(result: Any) -> Any:
        return serializer(result).data if isinstance(serializer, type) else serializer(result)

    def rendered(result: Any) -> StoredResponse:
        return StoredResponse.rendered(200, {"success": True, "data": present(result)})

    def answer(checked: Checked) -> StoredResponse:
        # A result that is already an answer (a request held for approval: 202) is sent as it is.
        result = work(checked)
        return result if isinstance(result, StoredResponse) else rendered(result)

    if work_at_once is not None:
        at_once = work_at_once
        options["work_at_once"] = lambda checked, claim: at_once(checked, claim, rendered)

    stored = idempotent_checked_call(
        program=program,
        sandbox=sandbox,
        owner_kind=owner_kind,
        owner_id=owner_id,
        operation=operation,
        key=key,
        fingerprint=fingerprint,
        checks=checks,
        work=answer,
        **options,
    )
    return stored_response_http(stored)
