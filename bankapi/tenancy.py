"""Who may see what: the tenancy rules, written once and read three ways.

A caller (a `bankapi.scope.Scope`: its role, program, environment, and the
customer or custodian it acts for) sees a row when the row's rule holds. A rule
is a list of equalities between a field of the row and a term: a value of the
caller (`Caller`), or a field of a row the request resolved before it (`Of`: the
customer an account must belong to, the customer a beneficiary must belong to).
Each rule is read as

- an ORM filter (`Rule.filter`), by the selectors of `bankapi.scope`;
- SQL conditions (`Rule.sql`), by the statement that reads an account-scoped
  route's caller together with its account (`bankapi.http.api`);
- a check of rows already in memory (`Rule.holds`), which confirms what that
  statement read before a route uses it.

A term without a value (a customer user whose customer is missing) matches no
row in any reading: SQL's `= NULL` is never true, and the other two readings
refuse it explicitly (a null filter would read as IS NULL and match every row
without one).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from django.db.models import Model, QuerySet

from bankapi.roles import Role

if TYPE_CHECKING:
    from bankapi.scope import Scope

RowT = TypeVar("RowT", bound=Model)
QuerySetT = TypeVar("QuerySetT", bound=QuerySet[Any])


@dataclass(frozen=True)
class Caller:
    """A value of the caller's scope: `program_id`, `sandbox`, `customer_id` or
    `custodian_id` (in SQL, the column of the caller's user of that name)."""

    attr: str


@dataclass(frozen=True)
class Of:
    """A field of a row resolved earlier in the request, known as `name`."""

    name: str
    field: str


Term = Caller | Of


@dataclass(frozen=True)
class Rule:
    """Every `(field, term)` pair holds: the row's field (an attribute name such
    as `customer_id`) equals the term's value."""

    equal: tuple[tuple[str, Term], ...]

    def __add__(self, other: "Rule") -> "Rule":
        return Rule(self.equal + other.equal)

    @staticmethod
    def _value(field: str, term: Term, caller: "Scope | None", rows: Mapping[str, Model] | None) -> Any:
        if isinstance(term, Caller):
            if caller is None:
                raise TypeError(f"this rule compares {field} with the caller's {term.attr}: pass the caller")
            return getattr(caller, term.attr)
        return getattr((rows or {})[term.name], term.field)

    def values(
        self, caller: "Scope | None", rows: Mapping[str, Model] | None = None
    ) -> dict[str, Any] | None:
        """Each field's required value, or None when a term has none (no row
        matches). `caller` may be None for a rule with no `Caller` term."""
        found: dict[str, Any] = {}
        for field, term in self.equal:
            value = self._value(field, term, caller, rows)
            if value is None:
                return None
            found[field] = value
        return found

    def filter(
        self, rows: QuerySetT, caller: "Scope | None", related: Mapping[str, Model] | None = None
    ) -> QuerySetT:
        """`rows` narrowed to those the rule gives the caller."""
        values = self.values(caller, related)
        return rows.none() if values is None else rows.filter(**values)

    def holds(self, row: Model, caller: "Scope | None", related: Mapping[str, Model] | None = None) -> bool:
        """Whether the rule gives the caller this row, already in memory."""
        for field, term in self.equal:
            value = self._value(field, term, caller, related)
            if value is None or getattr(row, field) != value:
                return False
        return True

    def sql(
        self, model: type[Model], alias: str, term: Callable[[Term], str], name: Callable[[str], str]
    ) -> str:
        """The rule as SQL conditions on `model`'s row under `alias`; `term` gives
        each term's SQL expression, `name` quotes an identifier."""
        return " AND ".join(
            f"{name(alias)}.{name(str(model._meta.get_field(field).column))} = {term(value)}"  # type: ignore[union-attr]
            for field, value in self.equal
        )


# A tenant-owned row of the caller's program and environment.
TENANT = Rule((("program_id", Caller("program_id")), ("sandbox", Caller("sandbox"))))

# The customers a caller acts for, per role: management every customer of the
# program it names; a customer user its own customer; a custodian user every
# customer of its custodian. A role not listed acts for nobody.
CUSTOMERS: dict[str, Rule] = {
    Role.MANAGEMENT: TENANT,
    Role.CUSTOMER: TENANT + Rule((("id", Caller("customer_id")),)),
    Role.CUSTODIAN: TENANT + Rule((("custodian_id", Caller("custodian_id")),)),
}

# An account named under a customer the caller acts for ("customer"): that
# customer's, in the caller's program and environment.
ACCOUNT_OF_CUSTOMER = TENANT + Rule((("customer_id", Of("customer", "id")),))

# A row a customer owns (a saved beneficiary), given a customer the caller acts
# for ("customer"): that customer's, in that customer's program and environment.
OWNED_BY_CUSTOMER = Rule(
    (
        ("customer_id", Of("customer", "id")),
        ("program_id", Of("customer", "program_id")),
        ("sandbox", Of("customer", "sandbox")),
    )
)


def owned_by_party(customer_field: str, custodian_field: str = "custodian_id") -> dict[str, Rule]:
    """The rows a caller owns as the party it acts as, per role, in the caller's
    program and environment: a customer user's are those whose `customer_field`
    is its customer, a custodian user's those whose `custodian_field` is its
    custodian. Management owns nothing by party; a role not listed sees nothing."""
    return {
        Role.CUSTOMER: TENANT + Rule(((customer_field, Caller("customer_id")),)),
        Role.CUSTODIAN: TENANT + Rule(((custodian_field, Caller("custodian_id")),)),
    }


# Events: a customer user sees its customer's, a custodian user its custodian's
# (those of its batches), management every event of the program it names.
EVENTS: dict[str, Rule] = {Role.MANAGEMENT: TENANT, **owned_by_party("customer_id")}

# Drafts, challenges and batches, by their owner columns: a customer user's own,
# a custodian user's custodian's.
BATCH_OWNERS: dict[str, Rule] = owned_by_party("owner_customer_id")


def role_filter(rules: Mapping[str, Rule], rows: QuerySetT, caller: "Scope") -> QuerySetT:
    """`rows` narrowed to those the rule of the caller's role in `rules` gives
    it: none for a role not listed."""
    rule = rules.get(caller.role)
    return rows.none() if rule is None else rule.filter(rows, caller)


# A row that belongs to a customer or to a custodian as a whole (an approval, an
# approval policy), per role: a customer user's own customer's rows, a custodian
# user's custodian's, in the caller's program and environment. Other roles: none.
OWNED_BY_PARTY: dict[str, Rule] = owned_by_party("customer_id")


def customers_rule(role: str) -> Rule | None:
    """The rule of the customers a caller of this role acts for (None: nobody)."""
    return CUSTOMERS.get(role)
