"""One table of callers, accounts and beneficiaries, fed to every reading of the
tenancy rules: the selectors of `bankapi.scope` (ORM queries), the statement that
reads an account-scoped route's caller with its account and beneficiary
(`bankapi.http.api`, SQL), its check in memory, and, for a sample, the route itself.

Every reading must find exactly the rows the selectors find. The one-statement
read serves customer users only: for them it must answer everything the
selectors answer, found or not; for any other caller it finds nothing and the
route asks the selectors.
"""

import dataclasses
import uuid
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from authn.models import User
from authn.tokens import decode_token, tokens_issue, user_for_claims
from bankapi.errors import ApiError
from bankapi.http.api import AccountScopedView, preloaded_account
from bankapi.models import Account, Custodian, Customer, Program
from bankapi.roles import Role
from bankapi.scope import Scope, access_account, access_customer, parse_uuid, scope_from_request
from bankapi.tenancy import CUSTOMERS
from payments.models import Beneficiary
from payments.services.create import payee_resolve
from tests.payments.conftest import payments_url

MALFORMED = "not-a-uuid"
UNKNOWN = str(uuid.uuid4())


@dataclass
class World:
    callers: dict[str, tuple[User, dict[str, str]]]  # name -> (user, query parameters)
    customers: dict[str, Customer]
    accounts: dict[str, Account]
    beneficiaries: dict[str, Beneficiary]


def _customer(name: str, program: Program, sandbox: bool, custodian: Custodian | None = None):
    customer = Customer.objects.create(program=program, sandbox=sandbox, name=name, custodian=custodian)
    account = Account.objects.create(program=program, sandbox=sandbox, customer=customer, currency="GBP")
    beneficiary = Beneficiary.objects.create(
        program=program,
        sandbox=sandbox,
        customer=customer,
        name=f"Payee of {name}",
        account_kind=Beneficiary.AccountKind.UK,
        sort_code="040004",
        account_number="12345678",
    )
    return customer, account, beneficiary


def _user(email: str, role: str, program: Program | None, sandbox: bool, **party: Any) -> User:
    return User.objects.create(email=email, program=program, sandbox=sandbox, role=role, **party)


@pytest.fixture
def world(db) -> World:
    home = Program.objects.create(name="Home", account_type=Program.AccountType.CONSUMER)
    away = Program.objects.create(name="Away", account_type=Program.AccountType.CONSUMER)
    firm = Custodian.objects.create(program=home, sandbox=True, name="Firm")
    rival = Custodian.objects.create(program=home, sandbox=True, name="Rival firm")
    rows = {
        "alice": _customer("Alice", home, True, custodian=firm),
        "bob": _customer("Bob", home, True),
        "live": _customer("Live", home, False),
        "away": _customer("Away", away, True),
        "moved": _customer("Moved", home, True),
    }
    callers = {
        "alice": (_user("alice@t.test", Role.CUSTOMER, home, True, customer=rows["alice"][0]), {}),
        "bob": (_user("bob@t.test", Role.CUSTOMER, home, True, customer=rows["bob"][0]), {}),
        "live": (_user("live@t.test", Role.CUSTOMER, home, False, customer=rows["live"][0]), {}),
        "away": (_user("away@t.test", Role.CUSTOMER, away, True, customer=rows["away"][0]), {}),
        "moved": (_user("moved@t.test", Role.CUSTOMER, home, True, customer=rows["moved"][0]), {}),
        "disabled": (_user("off@t.test", Role.CUSTOMER, home, True, customer=rows["alice"][0]), {}),
        "firm": (_user("firm@t.test", Role.CUSTODIAN, home, True, custodian=firm), {}),
        "rival": (_user("rival@t.test", Role.CUSTODIAN, home, True, custodian=rival), {}),
        "management": (_user("m@t.test", Role.MANAGEMENT, None, True), {"programId": str(home.id)}),
        "management-away": (_user("ma@t.test", Role.MANAGEMENT, None, True), {"programId": str(away.id)}),
        "management-no-program": (_user("mn@t.test", Role.MANAGEMENT, None, True), {}),
        "management-live": (_user("ml@t.test", Role.MANAGEMENT, None, False), {"programId": str(home.id)}),
    }
    # A customer moved to the other environment after its user was made: its
    # user's tokens still name the sandbox, where the customer no longer is.
    Customer.objects.filter(id=rows["moved"][0].id).update(sandbox=False)
    Account.objects.filter(customer=rows["moved"][0]).update(sandbox=False)
    Beneficiary.objects.filter(customer=rows["moved"][0]).update(sandbox=False)
    return World(
        callers=callers,
        customers={name: row[0] for name, row in rows.items()},
        accounts={name: row[1] for name, row in rows.items()},
        beneficiaries={name: row[2] for name, row in rows.items()},
    )


def _claims(world: World, caller: str) -> dict:
    user = world.callers[caller][0]
    claims = decode_token(tokens_issue(user).access_token)
    if caller == "disabled":
        User.objects.filter(id=user.id).update(is_active=False)
    return claims


def _scope(world: World, caller: str, claims: dict, user: User) -> Scope:
    request = SimpleNamespace(auth=claims, user=user, query_params=world.callers[caller][1])
    return scope_from_request(request)  # type: ignore[arg-type]


class _Probe(AccountScopedView):
    """The one-statement read of an account-scoped route, outside a request."""

    customer_row = Beneficiary

    def __init__(self, customer_id: str, account_id: str, beneficiary_id: str | None) -> None:
        super().__init__()
        self.kwargs = {"customerId": customer_id, "accountId": account_id}
        self.named = beneficiary_id

    def customer_row_id(self) -> uuid.UUID | None:
        return parse_uuid(self.named)


def _outcome(call) -> Any:
    try:
        return call()
    except ApiError as error:
        return error.status


def _id(row: Any) -> Any:
    return row.id if isinstance(row, Account | Beneficiary | Customer) else row


# (customerId, accountId) named in the path: customer names of the world, or ids.
TARGETS = [
    ("alice", "alice"),
    ("bob", "bob"),
    ("live", "live"),
    ("away", "away"),
    ("moved", "moved"),
    ("alice", "bob"),  # another customer's account under one's own customer
    ("bob", "alice"),
    ("alice", UNKNOWN),
    (UNKNOWN, "alice"),
    (MALFORMED, "alice"),
    ("alice", MALFORMED),
]
CALLERS = [
    "alice",
    "bob",
    "live",
    "away",
    "moved",
    "disabled",
    "firm",
    "rival",
    "management",
    "management-away",
    "management-no-program",
    "management-live",
]
BENEFICIARIES = ["alice", "bob", "live", "away", "moved", UNKNOWN, MALFORMED]


def _path_id(world: World, rows: dict, value: str) -> str:
    return str(rows[value].id) if value in rows else value


def _readings(world: World, caller: str, target: tuple[str, str], beneficiary: str) -> tuple[Any, Any, Any]:
    """What the selectors, the one-statement read as the route uses it (its
    rows confirmed in memory) and that statement alone answer: each a status
    (the caller refused before any row), or (account, beneficiary), each an id,
    404 (selectors), or None (the statement did not find it)."""
    customer_id = _path_id(world, world.customers, target[0])
    account_id = _path_id(world, world.accounts, target[1])
    beneficiary_id = _path_id(world, world.beneficiaries, beneficiary)
    claims = _claims(world, caller)

    def by_selectors() -> tuple[Any, Any]:
        scope = _scope(world, caller, claims, user_for_claims(claims))
        account = _outcome(lambda: access_account(scope, customer_id, account_id))
        if not isinstance(account, Account):
            return account, None
        payee = _outcome(lambda: payee_resolve(account=account, beneficiary_id=beneficiary_id, payee=None)[0])
        return account.id, _id(payee)

    probe = _Probe(customer_id, account_id, beneficiary_id)

    def in_one_statement() -> tuple[Any, Any]:
        scope = _scope(world, caller, claims, user_for_claims(claims, probe._caller_with_account))
        read_account, read_row = probe._preloaded
        account = preloaded_account(scope, read_account, customer_id, account_id)
        # Whatever the statement read, only what the rules confirm in memory is used.
        assert account is read_account or account is None
        if account is None:
            return None, None
        with CaptureQueriesContext(connection) as queries:
            payee = _outcome(
                lambda: payee_resolve(
                    account=account,
                    beneficiary_id=beneficiary_id,
                    payee=None,
                    beneficiary_read=read_row if isinstance(read_row, Beneficiary) else None,
                )[0]
            )
        # Found in the row read with the caller (no query), or not found there.
        used = isinstance(payee, Beneficiary) and not queries.captured_queries
        return account.id, payee.id if used else None

    selected, used = _outcome(by_selectors), _outcome(in_one_statement)
    read_account, read_row = probe._preloaded
    sql_only = (
        used if not isinstance(used, tuple) else (_id(read_account), _id(read_row) if read_account else None)
    )
    return selected, used, sql_only


# The accounts (by customer name) each caller reaches through the selectors, or
# the status refusing it first: what the rules below are meant to say.
VISIBLE: dict[str, set[str] | int] = {
    "alice": {"alice"},
    "bob": {"bob"},
    "live": {"live"},
    "away": {"away"},
    "moved": set(),  # its customer is no longer in its environment
    "disabled": 401,
    "firm": {"alice"},
    "rival": set(),
    "management": {"alice", "bob"},
    "management-away": {"away"},
    "management-no-program": 400,
    "management-live": {"live", "moved"},
}


@pytest.mark.parametrize("caller", CALLERS)
def test_every_reading_of_the_rules_finds_the_same_rows(world, caller):
    role = world.callers[caller][0].role
    reached = set()
    for target in TARGETS:
        for beneficiary in BENEFICIARIES:
            selected, read, sql_only = _readings(world, caller, target, beneficiary)
            where = (caller, target, beneficiary, selected, read, sql_only)
            if not isinstance(selected, tuple):
                # Refused before any row, by the token (401) or the scope (400): alike.
                assert read == sql_only == selected == VISIBLE[caller], where
                continue
            account, payee = selected
            if account != 404:
                assert target[0] == target[1], where
                reached.add(target[0])
                assert payee == (world.beneficiaries[beneficiary].id if beneficiary == target[0] else 404), (
                    where
                )
            found = (account if account != 404 else None, payee if payee != 404 else None)
            if role == Role.CUSTOMER:
                # For a customer user the statement finds exactly what the
                # selectors find, and its SQL alone already does.
                assert read == sql_only == found, where
            else:
                # For anyone else it finds nothing: the route asks the selectors.
                assert read == sql_only == (None, None), where
    if isinstance(VISIBLE[caller], set):
        assert reached == VISIBLE[caller]


@pytest.mark.parametrize(
    ("caller", "target", "beneficiary", "status"),
    [
        ("alice", ("alice", "alice"), "alice", 422),  # found, then short of funds
        ("alice", ("alice", "alice"), "bob", 404),
        ("alice", ("alice", "alice"), "live", 404),
        ("alice", ("bob", "bob"), "bob", 404),
        ("alice", ("alice", "bob"), "bob", 404),
        ("firm", ("alice", "alice"), "alice", 422),
        ("firm", ("alice", "alice"), "bob", 404),
        ("rival", ("alice", "alice"), "alice", 404),
        ("live", ("alice", "alice"), "alice", 404),
        ("away", ("alice", "alice"), "alice", 404),
        ("moved", ("moved", "moved"), "moved", 404),
        ("disabled", ("alice", "alice"), "alice", 401),
    ],
)
def test_the_route_answers_as_the_rules_do(api, world, snapshot, caller, target, beneficiary, status):
    customer = world.customers[target[0]]
    account = world.accounts[target[1]]
    claims_user = world.callers[caller][0]
    token = tokens_issue(claims_user).access_token
    if caller == "disabled":
        User.objects.filter(id=claims_user.id).update(is_active=False)
    before = snapshot()

    response = api.post(
        payments_url(customer.id, account.id),
        {"amount": "1.00", "reference": "Table", "beneficiaryId": str(world.beneficiaries[beneficiary].id)},
        format="json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
    )

    assert response.status_code == status, response.json()
    if status == 422:
        assert response.json()["code"] == "INSUFFICIENT_FUNDS"
    assert before.unchanged()


def test_a_customer_pays_its_beneficiary_reading_caller_account_and_beneficiary_at_once(
    api, customer_auth, account, beneficiary
):
    body = {"amount": "1.00", "reference": "Once", "beneficiaryId": str(beneficiary.id)}
    url = payments_url(account.customer_id, account.id)
    beneficiaries = Beneficiary._meta.db_table

    with CaptureQueriesContext(connection) as queries:
        response = api.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()), **customer_auth)

    assert response.status_code == 200, response.json()
    reads = [q["sql"] for q in queries.captured_queries if beneficiaries in q["sql"] and "SELECT" in q["sql"]]
    assert len(reads) == 1 and "authn_user" in reads[0], reads


@pytest.mark.parametrize("raw", ['{"amount": "1.00", "beneficiaryId": ', "[1, 2"])
def test_a_body_that_does_not_parse_is_refused_after_the_account_is_resolved(
    api, customer_auth, account, customer2_account, raw
):
    own = payments_url(account.customer_id, account.id)
    other = payments_url(customer2_account.customer_id, customer2_account.id)

    mine = api.post(own, raw, content_type="application/json", **customer_auth)
    theirs = api.post(other, raw, content_type="application/json", **customer_auth)

    assert (mine.status_code, mine.json()["code"]) == (400, "VALIDATION_ERROR")
    assert mine.json()["errors"][0]["message"].startswith("JSON parse error"), mine.json()
    assert (theirs.status_code, theirs.json()["code"]) == (404, "RESOURCE_NOT_FOUND")


@pytest.mark.parametrize("caller", [c for c in CALLERS if c not in ("disabled", "management-no-program")])
def test_a_customer_is_found_alike_in_memory_and_by_query(world, caller):
    # The caller's own customer, loaded with the user, is checked in memory; with
    # it not loaded, the same question goes to the database.
    claims = _claims(world, caller)
    loaded = _scope(world, caller, claims, user_for_claims(claims))
    asked = dataclasses.replace(loaded, customer=None)
    for name, customer in world.customers.items():
        for named in (str(customer.id), str(customer.id).upper()):
            with CaptureQueriesContext(connection) as queries:
                from_memory = _id(_outcome(partial(access_customer, loaded, named)))
            by_query = _id(_outcome(partial(access_customer, asked, named)))
            assert from_memory == by_query, (caller, name, from_memory, by_query)
            own = loaded.customer is not None and loaded.customer.id == customer.id and by_query != 404
            assert (len(queries.captured_queries) == 0) == own, (caller, name)


def test_a_rule_about_the_caller_cannot_be_checked_without_one(world):
    # A forgotten caller must not read as "no condition" (every customer).
    customer = world.customers["alice"]
    with pytest.raises(TypeError):
        CUSTOMERS[Role.CUSTOMER].holds(customer, None)
    with pytest.raises(TypeError):
        CUSTOMERS[Role.CUSTODIAN].filter(Customer.objects.all(), None)
