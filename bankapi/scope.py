"""The caller's tenant scope, resolved once per request from the verified token.

Program, environment and customer come from the token (and the user it names),
never from the request body. Management callers carry no program in their token
and name one with the `programId` query parameter.
"""

import uuid
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from rest_framework.request import Request

from bankapi.clock import customer_clock_known
from bankapi.errors import ApiError, Code, ErrorCode, not_found, validation_error
from bankapi.models import Account, Customer, Program
from bankapi.ops.logs import log_context_bind
from bankapi.roles import Role
from bankapi.tenancy import ACCOUNT_OF_CUSTOMER, customers_rule

RowT = TypeVar("RowT", bound=Model)

__all__ = [
    "Role",
    "Scope",
    "access_account",
    "access_any_account",
    "access_customer",
    "get_or_not_found",
    "scope_from_request",
]


@dataclass(frozen=True)
class Scope:
    program_id: uuid.UUID
    sandbox: bool
    role: str
    user_id: uuid.UUID
    customer_id: uuid.UUID | None
    custodian_id: uuid.UUID | None
    # Rows already loaded with the caller (the user's program and customer), so
    # that resolving them again costs no query. None when not loaded.
    program: Program | None = field(default=None, compare=False, repr=False)
    customer: Customer | None = field(default=None, compare=False, repr=False)

    @property
    def is_management(self) -> bool:
        return self.role == Role.MANAGEMENT


def parse_uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def scope_from_request(request: Request) -> Scope:
    # Set by the bearer authentication class: the verified token's claims and its user.
    claims: dict[str, Any] = request.auth  # type: ignore[assignment]
    user: Any = request.user
    if claims["role"] == Role.MANAGEMENT:
        raw = request.query_params.get("programId")
        if not raw:
            raise validation_error("programId", "programId is required for management callers.")
        program_id = parse_uuid(raw)
        program = Program.objects.filter(id=program_id).first() if program_id else None
        if program is None:
            raise not_found("Program")
        program_id = program.id
        log_context_bind(program_id=program_id)
    else:
        program_id = uuid.UUID(claims["program"])
        # The token's program is the user's (checked when the token was verified).
        program = _loaded(user, "program", program_id)
    customer_id = getattr(user, "customer_id", None)
    customer = _loaded(user, "customer", customer_id)
    if customer is not None:
        customer_clock_known(customer.id, customer.test_clock_id)
    return Scope(
        program_id=program_id,
        sandbox=bool(claims["sandbox"]),
        role=claims["role"],
        user_id=user.id,
        customer_id=customer_id,
        custodian_id=getattr(user, "custodian_id", None),
        program=program,
        customer=customer,
    )


def _loaded(user: Any, relation: str, expected_id: uuid.UUID | None) -> Any:
    """The user's related row if it was loaded with the user and is the one expected."""
    if expected_id is None or not user._meta.get_field(relation).is_cached(user):
        return None
    row = getattr(user, relation)
    return row if row is not None and row.pk == expected_id else None


def program_for(scope: Scope) -> Program:
    return scope.program or Program.objects.get(id=scope.program_id)


def customers_of(scope: Scope) -> QuerySet[Customer]:
    """The customers this caller may act for, inside its program and environment
    (the rule of its role: `bankapi.tenancy.CUSTOMERS`)."""
    rule = customers_rule(scope.role)
    rows = Customer.objects.all()
    return rows.none() if rule is None else rule.filter(rows, scope)


def get_or_not_found(
    rows: QuerySet[RowT], raw_id: str | None, what: str, code: Code = ErrorCode.RESOURCE_NOT_FOUND
) -> RowT:
    """The row of `rows` (already narrowed to what the caller may see) with this id.

    A malformed id names nothing, so it is not found like another tenant's id:
    the answer never tells which ids exist. `code` is the route's not-found code
    (CARD_NOT_FOUND for cards).
    """
    parsed = parse_uuid(raw_id)
    row = rows.filter(pk=parsed).first() if parsed else None
    if row is None:
        raise ApiError(code, f"{what} not found")
    return row


def access_customer(scope: Scope, customer_id: str) -> Customer:
    """The customer named in the path, or not-found if the caller may not see it."""
    own, rule = scope.customer, customers_rule(scope.role)
    if own is not None and rule is not None and parse_uuid(customer_id) == own.id and rule.holds(own, scope):
        # The caller's own customer, loaded with the user, which the rule gives
        # it: the same row the query below would find, without asking again.
        return own
    return get_or_not_found(customers_of(scope), customer_id, "Customer")


def accounts_of(scope: Scope) -> QuerySet[Account]:
    return Account.objects.for_scope(scope).filter(customer__in=customers_of(scope))


def access_account(scope: Scope, customer_id: str, account_id: str) -> Account:
    """The account named in the path, owned by the customer named in the path."""
    customer = access_customer(scope, customer_id)
    accounts = ACCOUNT_OF_CUSTOMER.filter(Account.objects.all(), scope, {"customer": customer})
    account = get_or_not_found(accounts, account_id, "Account")
    # Both are the rows the account points at (same ids): following them costs no query.
    account.customer = customer
    if scope.program is not None:
        account.program = scope.program
    return account


def access_any_account(scope: Scope, account_id: str) -> Account:
    """An account of any customer the caller may act for (routes without a customer in the path)."""
    return get_or_not_found(accounts_of(scope).select_related("program"), account_id, "Account")
