"""Test data that says what a test needs: a program, a signed-in customer or
custodian with its accounts, a management user, a beneficiary, funds put in
through the ledger. Every call makes new rows, so a test depends on nothing the
sandbox bootstrap or another test made, and reads as its own setup.

    program = ProgramFactory()
    payer = customer_user(program)
    account = funded_account(payer.customer, "100.00")
    api.post(url, body, **payer.access)
"""

import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

import factory
import pyotp
from factory.django import DjangoModelFactory, Password

from authn.models import User
from authn.tokens import TokenSet, tokens_issue
from bankapi.models import Account, Custodian, Customer, Program
from bankapi.roles import Role
from payments.ledger import ledger_fund_account
from payments.models import Beneficiary

PASSWORD = "Quiet-Harbour-Lantern-42"


class ProgramFactory(DjangoModelFactory):
    """A consumer program with the model's default limits (25,000.00 a payment,
    500,000.00 a day, review from 10,000.00, no fee)."""

    class Meta:
        model = Program

    name = factory.Sequence(lambda n: f"Test Program {n}")
    account_type = Program.AccountType.CONSUMER


class UserFactory(DjangoModelFactory):
    """A signed-up user with PASSWORD and no second factor; pass `program_id`
    (None for management). `with_totp=True` confirms a TOTP secret."""

    class Meta:
        model = User

    class Params:
        with_totp = factory.Trait(totp_secret=factory.LazyFunction(pyotp.random_base32), totp_confirmed=True)

    email = factory.Sequence(lambda n: f"person{n}@example.test")
    password = Password(PASSWORD)
    role = Role.CUSTOMER
    sandbox = True
    # A customer user acts for a customer of its own program.
    customer = factory.LazyAttribute(
        lambda user: (
            Customer.objects.create(program_id=user.program_id, sandbox=user.sandbox, name=user.email)
            if user.role == Role.CUSTOMER
            else None
        )
    )


@dataclass
class SignedIn:
    """A user and the bearer headers its sign-in would give (tokens issued by the
    same service the sign-in routes call)."""

    user: User

    @cached_property
    def tokens(self) -> TokenSet:
        return tokens_issue(self.user)

    @property
    def access(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.tokens.access_token}"}

    @property
    def id(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.tokens.id_token}"}

    @property
    def email(self) -> str:
        return self.user.email

    @property
    def program_id(self) -> uuid.UUID:
        return self.user.program_id

    @property
    def customer(self) -> Customer:
        assert self.user.customer is not None, "not a customer user"
        return self.user.customer


def customer_user(program: Program, **user_fields) -> SignedIn:
    """A customer of `program` (an individual, in the sandbox) and its user, with a
    confirmed TOTP secret."""
    return SignedIn(UserFactory(program_id=program.id, with_totp=True, **user_fields))


def management_user() -> SignedIn:
    """A management user: no program of its own, it names one per request."""
    return SignedIn(UserFactory(program_id=None, role=Role.MANAGEMENT))


# Distinct in the process, so two accounts never share a UK account number.
_account_numbers = (f"{n:08d}" for n in range(10_000_000, 100_000_000))


def uk_account() -> dict[str, str]:
    """Fields of an account reachable by sort code and account number (a batch
    payer is named so)."""
    return {"sort_code": "040004", "account_number": next(_account_numbers)}


def funded_account(customer: Customer, balance: str, currency: str = "GBP", **fields) -> Account:
    """A new account of the customer holding `balance`, funded through the ledger."""
    account = Account.objects.create(
        program_id=customer.program_id,
        sandbox=customer.sandbox,
        customer=customer,
        name=f"Test {currency}",
        currency=currency,
        **fields,
    )
    if Decimal(balance):
        ledger_fund_account(account, Decimal(balance), key=f"test-funding:{uuid.uuid4()}")
    return account


@dataclass
class CustodianSetup:
    """A custodian of a program, its signed-in user and one funded GBP account for
    each of its client customers."""

    custodian: Custodian
    person: SignedIn
    accounts: list[Account] = field(default_factory=list)

    @property
    def user(self) -> User:
        return self.person.user


def custodian_with_clients(
    program: Program, clients: int = 2, balance: str = "100000.00", name: str = "Test Custodian"
) -> CustodianSetup:
    custodian = Custodian.objects.create(program=program, sandbox=True, name=name)
    person = SignedIn(
        UserFactory(program_id=program.id, role=Role.CUSTODIAN, custodian=custodian, with_totp=True)
    )
    accounts = [
        funded_account(
            Customer.objects.create(
                program=program, sandbox=True, name=f"Custodian Client {index}", custodian=custodian
            ),
            balance,
            **uk_account(),
        )
        for index in range(1, clients + 1)
    ]
    return CustodianSetup(custodian=custodian, person=person, accounts=accounts)


class BeneficiaryFactory(DjangoModelFactory):
    """A UK beneficiary of `customer` (required)."""

    class Meta:
        model = Beneficiary

    customer = None
    program_id = factory.LazyAttribute(lambda o: o.customer.program_id)
    sandbox = factory.LazyAttribute(lambda o: o.customer.sandbox)
    name = factory.Sequence(lambda n: f"Payee {n}")
    account_kind = Beneficiary.AccountKind.UK
    sort_code = "200000"
    account_number = factory.Sequence(lambda n: f"{n:08d}")


class IbanBeneficiaryFactory(BeneficiaryFactory):
    account_kind = Beneficiary.AccountKind.IBAN
    sort_code = ""
    account_number = ""
    iban = "DE89370400440532013000"
    bic = "COBADEFFXXX"
