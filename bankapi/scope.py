"""The caller's tenant scope, resolved once per request from the verified token.

Program, environment and customer come from the token (and the user it names),
never from the request body. Management callers carry no program in their token
and name one with the `programId` query parameter.
"""

import uuid
from dataclasses import dataclass

from bankapi.errors import not_found, validation_error
from bankapi.models import Account, Customer, Program
from bankapi.roles import Role

__all__ = ["Role", "Scope", "access_account", "access_customer", "scope_from_request"]


@dataclass(frozen=True)
class Scope:
    program_id: uuid.UUID
    sandbox: bool
    role: str
    user_id: uuid.UUID
    customer_id: uuid.UUID | None
    custodian_id: uuid.UUID | None

    @property
    def is_management(self) -> bool:
        return self.role == Role.MANAGEMENT

    def tenant_filter(self, prefix: str = "") -> dict:
        """Keyword filter restricting a queryset to this program and environment."""
        return {f"{prefix}program_id": self.program_id, f"{prefix}sandbox": self.sandbox}


def parse_uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def scope_from_request(request) -> Scope:
    claims = request.auth
    user = request.user
    if claims["role"] == Role.MANAGEMENT:
        raw = request.query_params.get("programId")
        if not raw:
            raise validation_error("programId", "programId is required for management callers.")
        program_id = parse_uuid(raw)
        if program_id is None or not Program.objects.filter(id=program_id).exists():
            raise not_found("Program")
    else:
        program_id = uuid.UUID(claims["program"])
    return Scope(
        program_id=program_id,
        sandbox=bool(claims["sandbox"]),
        role=claims["role"],
        user_id=user.id,
        customer_id=getattr(user, "customer_id", None),
        custodian_id=getattr(user, "custodian_id", None),
    )


def program_for(scope: Scope) -> Program:
    return Program.objects.get(id=scope.program_id)


def customers_of(scope: Scope):
    """The customers this caller may act for, inside its program and environment."""
    customers = Customer.objects.filter(**scope.tenant_filter())
    if scope.role == Role.MANAGEMENT:
        return customers
    # A user missing its customer (or custodian) acts for nobody: filtering on a
    # null id would read as IS NULL and match every customer without one.
    if scope.role == Role.CUSTOMER and scope.customer_id is not None:
        return customers.filter(id=scope.customer_id)
    if scope.role == Role.CUSTODIAN and scope.custodian_id is not None:
        return customers.filter(custodian_id=scope.custodian_id)
    return customers.none()


def access_customer(scope: Scope, customer_id: str) -> Customer:
    """The customer named in the path, or not-found if the caller may not see it."""
    parsed = parse_uuid(customer_id)
    customer = customers_of(scope).filter(id=parsed).first() if parsed else None
    if customer is None:
        raise not_found("Customer")
    return customer


def accounts_of(scope: Scope):
    return Account.objects.filter(**scope.tenant_filter(), customer__in=customers_of(scope))


def access_account(scope: Scope, customer_id: str, account_id: str) -> Account:
    """The account named in the path, owned by the customer named in the path."""
    customer = access_customer(scope, customer_id)
    parsed = parse_uuid(account_id)
    account = (
        Account.objects.filter(**scope.tenant_filter(), customer=customer, id=parsed).first()
        if parsed
        else None
    )
    if account is None:
        raise not_found("Account")
    return account
