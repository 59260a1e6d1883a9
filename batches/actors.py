"""Who acts on a batch route, and which rows and accounts that gives them."""

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from bankapi.models import Account, Customer, TenantQuerySet
from bankapi.roles import Role
from bankapi.scope import Scope
from bankapi.tenancy import BATCH_OWNERS, TENANT, role_filter


@dataclass(frozen=True)
class Actor:
    """The caller of a batch route.

    A custodian acts for every customer of its custodian; a customer for itself.
    On the single-customer route `route_customer` is the path's customer: only
    its accounts pay, and only its batches and drafts are seen. A management
    caller owns nothing and reads the named program's batches.
    """

    scope: Scope
    route_customer: Customer | None = None

    @property
    def is_management(self) -> bool:
        return self.scope.role == Role.MANAGEMENT

    def owner_fields(self) -> dict:
        """The owner columns of a draft, challenge or batch this caller makes."""
        if self.scope.role == Role.CUSTODIAN:
            return {"custodian_id": self.scope.custodian_id, "owner_customer_id": None}
        return {"custodian_id": None, "owner_customer_id": self.scope.customer_id}

    def drafts(self, rows: TenantQuerySet[Any]) -> QuerySet[Any]:
        """Drafts this caller may see: its own (`bankapi.tenancy.BATCH_OWNERS`),
        never a management caller's."""
        rows = role_filter(BATCH_OWNERS, rows, self.scope)
        if self.route_customer is not None:
            rows = rows.filter(Q(route_customer=self.route_customer) | Q(owner_customer=self.route_customer))
        return rows

    def batches(self, rows: TenantQuerySet[Any]) -> QuerySet[Any]:
        """Batches this caller may see: its own (`bankapi.tenancy.BATCH_OWNERS`);
        a management caller every batch of the program it names."""
        if self.is_management:
            return TENANT.filter(rows, self.scope)
        rows = role_filter(BATCH_OWNERS, rows, self.scope)
        if self.route_customer is not None:
            customer = self.route_customer
            rows = rows.filter(Q(customer=customer) | Q(route_customer=customer) | Q(owner_customer=customer))
        return rows

    def payer_accounts(self) -> QuerySet:
        """The accounts this caller's batch may pay from."""
        if self.scope.role not in (Role.CUSTODIAN, Role.CUSTOMER):
            return Account.objects.none()
        return payer_accounts_of(
            program_id=self.scope.program_id,
            sandbox=self.scope.sandbox,
            route_customer_id=self.route_customer.id if self.route_customer else None,
            **self.owner_fields(),
        )


def payer_accounts_of(
    *, program_id, sandbox: bool, custodian_id, owner_customer_id, route_customer_id
) -> QuerySet:
    """The accounts a batch of this owner may pay from (the owner columns of a
    draft or batch): the route's customer's, else the custodian's customers',
    else the owner customer's."""
    accounts = Account.objects.filter(program_id=program_id, sandbox=sandbox).select_related("customer")
    if route_customer_id is not None:
        return accounts.filter(customer_id=route_customer_id)
    if custodian_id is not None:
        return accounts.filter(customer__custodian_id=custodian_id)
    if owner_customer_id is not None:
        return accounts.filter(customer_id=owner_customer_id)
    return accounts.none()
