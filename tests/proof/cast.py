"""The people of the security matrix: for each role, a victim and its outsiders.

Victims are the customer, custodian and management user of a `World`
(tests/support/factories_kernel.py).
Each has outsiders of the same role: another party of the same program and
environment, one of another program, and one of the other environment
(production), plus tokens that must never work: expired, revoked by a global
logout, of the wrong use, a refresh token, garbage, and unsigned.
"""

from dataclasses import dataclass, field
from datetime import timedelta

import jwt
import time_machine
from django.utils import timezone

from authn.models import User
from authn.tokens import ACCESS, ID, tokens_issue, tokens_revoke_all
from bankapi.models import Account, Custodian, Customer, Program
from bankapi.roles import Role
from tests.support.factories_kernel import World

# Columns of the matrix, in print order. "own" is the control: the victim's own
# right token, which must get past authentication and tenancy.
UNAUTHENTICATED = ("none", "garbage", "alg-none", "expired", "after-logout", "refresh-as-bearer", "wrong-use")
OUTSIDERS = ("other-customer", "other-program", "other-program+x-program-id", "other-environment")
VARIANTS = (*UNAUTHENTICATED, *OUTSIDERS, "own")


@dataclass
class Principal:
    """A victim: its users' tokens per variant and what of it must never leak."""

    role: str
    program_id: str
    path_values: dict[str, str]
    secrets: set[str]
    headers: dict[str, dict[str, dict[str, str]]] = field(
        default_factory=dict
    )  # token_use -> variant -> headers
    query: dict[str, str] = field(default_factory=dict)


def _bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _unsigned(user: User, token_use: str) -> str:
    claims = jwt.decode(
        getattr(tokens_issue(user), f"{token_use}_token"), options={"verify_signature": False}
    )
    return jwt.encode(claims, key=None, algorithm="none")


def _tokens(user: User, token_use: str) -> str:
    return getattr(tokens_issue(user), f"{token_use}_token")


def _outsider_headers(outsiders: dict[str, User | None], token_use: str, victim_program: str) -> dict:
    headers = {}
    for variant in OUTSIDERS:
        user = outsiders.get(variant.split("+")[0])
        if user is None:
            continue
        headers[variant] = _bearer(_tokens(user, token_use))
        if variant.endswith("+x-program-id"):
            headers[variant]["HTTP_X_PROGRAM_ID"] = victim_program
    return headers


def _victim_headers(victim: User, outsiders: dict[str, User | None], program_id: str) -> dict:
    """Headers per token use and variant. Stale tokens are issued before the logout
    that revokes them; the victim's good tokens after it."""
    stale = {use: _tokens(victim, use) for use in (ACCESS, ID)}
    with time_machine.travel(timezone.now() - timedelta(hours=1), tick=False):
        expired = {use: _tokens(victim, use) for use in (ACCESS, ID)}
    tokens_revoke_all(victim)
    victim.refresh_from_db()
    fresh = tokens_issue(victim)
    good = {ACCESS: fresh.access_token, ID: fresh.id_token}
    result = {}
    for use, other_use in ((ACCESS, ID), (ID, ACCESS)):
        result[use] = {
            "none": {},
            "garbage": _bearer("not-a-token"),
            "alg-none": _bearer(_unsigned(victim, use)),
            "expired": _bearer(expired[use]),
            "after-logout": _bearer(stale[use]),
            "refresh-as-bearer": _bearer(fresh.refresh_token),
            "wrong-use": _bearer(good[other_use]),
            **_outsider_headers(outsiders, use, program_id),
            "own": _bearer(good[use]),
        }
    return result


def _party_user(email: str, role: str, program: Program | None, sandbox: bool, **party) -> User:
    return User.objects.create(email=email, program=program, sandbox=sandbox, role=role, **party)


def _customer_with_account(program: Program, sandbox: bool, name: str, custodian=None) -> Customer:
    customer = Customer.objects.create(program=program, sandbox=sandbox, name=name, custodian=custodian)
    Account.objects.create(program=program, sandbox=sandbox, customer=customer, name=name, currency="GBP")
    return customer


def _custodian_user(email: str, program: Program, sandbox: bool) -> User:
    custodian = Custodian.objects.create(program=program, sandbox=sandbox, name=f"Custodian {email}")
    _customer_with_account(program, sandbox, f"Client of {email}", custodian=custodian)
    return _party_user(email, Role.CUSTODIAN, program, sandbox, custodian=custodian)


def _account_secrets(account_ids) -> set[str]:
    values = set()
    for number, iban in Account.objects.filter(id__in=account_ids).values_list("account_number", "iban"):
        values.update(value for value in (number, iban) if value)
    return values


def customer_principal(world: World, objects: dict[str, str]) -> Principal:
    """The world's customer; `objects` names its other resources by path parameter."""
    consumer = world.consumer
    me = world.customer_ids
    victim = world.customer.user
    live = _customer_with_account(consumer, False, "Live Customer")
    outsiders = {
        "other-customer": world.customer2.user,
        "other-program": world.business.user,
        "other-environment": _party_user(
            "live-customer@example.com", Role.CUSTOMER, consumer, False, customer=live
        ),
    }
    accounts = [account.id for account in world.customer_accounts]
    return Principal(
        role=Role.CUSTOMER,
        program_id=str(consumer.id),
        path_values={"customerId": me["customerId"], "accountId": me["accountId"], **objects},
        secrets=set(me.values()) | set(objects.values()) | {victim.email} | _account_secrets(accounts),
        headers=_victim_headers(victim, outsiders, str(consumer.id)),
    )


def custodian_principal(world: World, objects: dict[str, str]) -> Principal:
    consumer, business = world.consumer, world.business_program
    victim = world.custodian.user
    outsiders = {
        "other-customer": _custodian_user("other-custodian@example.com", consumer, True),
        "other-program": _custodian_user("business-custodian@example.com", business, True),
        "other-environment": _custodian_user("live-custodian@example.com", consumer, False),
    }
    accounts = [str(account.id) for account in world.custodian.accounts]
    customer_ids = [str(account.customer_id) for account in world.custodian.accounts]
    return Principal(
        role=Role.CUSTODIAN,
        program_id=str(consumer.id),
        path_values={"customerId": customer_ids[0], "accountId": accounts[0], **objects},
        secrets=set(customer_ids) | set(accounts) | {victim.email} | _account_secrets(accounts),
        headers=_victim_headers(victim, outsiders, str(consumer.id)),
    )


def management_principal(world: World, objects: dict[str, str], secrets: set[str]) -> Principal:
    """The world's management user naming the consumer program. It has no program
    of its own, so its only outsider is a production management user."""
    victim = world.management.user
    program_id = str(world.consumer.id)
    outsiders = {
        "other-environment": _party_user("live-management@example.com", Role.MANAGEMENT, None, False)
    }
    return Principal(
        role=Role.MANAGEMENT,
        program_id=program_id,
        path_values=dict(objects),
        secrets=secrets | set(objects.values()),
        headers=_victim_headers(victim, outsiders, program_id),
        query={"programId": program_id},
    )
