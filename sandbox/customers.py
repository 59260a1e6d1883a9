"""Customers on demand: a new customer of a program's sandbox, made as the
bootstrap makes its customers (the same account, user, funding, beneficiary
and card code), optionally living on a test clock for good."""

import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from authn.sandbox import DOMAIN, sandbox_user
from authn.services.stepup import step_up_pin_set
from bankapi.errors import ApiError
from bankapi.models import Account, Customer, Program, TestClock
from bankapi.roles import Role
from bankapi.sandbox import FULL_BALANCE, SandboxContext, sandbox_account
from cards.models import Card
from cards.services import card_issue
from payments.errors import PaymentErrorCode
from payments.sandbox import sandbox_beneficiary, sandbox_fund

BUDGET_WINDOW = timedelta(hours=24)
NAME_ON_CARD_MAX = 26


@dataclass(frozen=True)
class MadeCustomer:
    """A customer made on demand, with the secrets shown once."""

    customer: Customer
    email: str
    password: str
    totp_secret: str
    pin: str | None
    account: Account
    eur_account: Account
    beneficiary_id: uuid.UUID
    card: Card


def name_on_card(name: str) -> str:
    """The name in capitals, every character but A-Z and space removed, cut to 26."""
    return re.sub(r"[^A-Z ]", "", name.upper())[:NAME_ON_CARD_MAX]


def _budget_check(program: Program) -> int:
    """How many customers the program made on demand in the last 24 hours;
    422 LIMIT_EXCEEDED at settings.SANDBOX_CUSTOMERS_MAX. Real time: a budget."""
    since = timezone.now() - BUDGET_WINDOW
    made = Customer.objects.filter(program=program, sandbox=True, made_on_demand_at__gt=since).count()
    if made >= settings.SANDBOX_CUSTOMERS_MAX:
        raise ApiError(
            PaymentErrorCode.LIMIT_EXCEEDED,
            f"A program may make at most {settings.SANDBOX_CUSTOMERS_MAX} sandbox customers in 24 hours.",
        )
    return made


def sandbox_customer_make(*, program: Program, name: str | None, clock: TestClock | None) -> MadeCustomer:
    """Make the customer, its TOTP-enrolled user, a GBP and an EUR account funded
    through the ledger, a saved beneficiary and an ACTIVE card on the GBP account.
    Must run in a transaction (the caller's: the answer is stored with it)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("sandbox_customer_make must run inside transaction.atomic()")
    # The program's row lock: two makes at the budget cannot both pass the count.
    Program.objects.select_for_update().filter(id=program.id).first()
    made = _budget_check(program)
    customer = Customer.objects.create(
        program=program,
        sandbox=True,
        name=name or f"Sandbox Customer {made + 1}",
        kind=Customer.Kind.COMPANY
        if program.account_type == Program.AccountType.BUSINESS
        else Customer.Kind.INDIVIDUAL,
        test_clock=clock,
        made_on_demand_at=timezone.now(),
    )
    ctx = SandboxContext(previous={})
    account = sandbox_account(ctx, customer, "Main GBP", "GBP", FULL_BALANCE)
    eur_account = sandbox_account(ctx, customer, "Main EUR", "EUR", FULL_BALANCE)
    sandbox_fund(ctx)
    email = f"customer-{uuid.uuid4().hex[:16]}@{DOMAIN}"
    credentials = sandbox_user(
        ctx, "customer", email, program=program, totp=True, role=Role.CUSTOMER, customer=customer
    )
    pin = None
    if program.pin_confirmation_enabled:
        pin = f"{secrets.randbelow(10**6):06d}"
        step_up_pin_set(user=customer.users.get(), pin=pin)
    return MadeCustomer(
        customer=customer,
        email=email,
        password=credentials["password"],
        totp_secret=credentials["totpSecret"],
        pin=pin,
        account=account,
        eur_account=eur_account,
        beneficiary_id=sandbox_beneficiary(customer).id,
        card=card_issue(account=account, name_on_card=name_on_card(customer.name)),
    )
