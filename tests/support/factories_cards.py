"""Card customers: a signed-up customer user with a funded GBP account and a card
on it, as a card test uses them.

    program = card_program()                       # cardholders off, PIN off
    ada = card_customer(program, "Ada Lovelace")
    api.post(ada.card_url("/secure"), body, format="json", **ada.auth)
"""

from dataclasses import dataclass

from authn.models import User
from authn.tokens import tokens_issue
from bankapi.models import Account, Customer, Program
from cards.models import Card
from cards.services import card_issue
from tests.support.factories import ProgramFactory, funded_account, uk_account
from tests.support.factories_authn import Person, person


def card_program(**fields) -> Program:
    """A consumer program: no cardholders, no PIN confirmation (pass fields to change)."""
    return ProgramFactory(cardholders_enabled=False, pin_confirmation_enabled=False, **fields)


def business_card_program(**fields) -> Program:
    """A business program offering cardholders and PIN confirmation."""
    return ProgramFactory(
        account_type=Program.AccountType.BUSINESS,
        cardholders_enabled=True,
        pin_confirmation_enabled=True,
        **fields,
    )


@dataclass
class CardCustomer:
    """A customer of a program, its TOTP-confirmed user (and PIN, if given), its GBP
    account holding 100,000.00 and the card issued on that account. Rows are read
    afresh on each use, so a test sees what its requests changed."""

    person: Person
    customer_id: str
    account_id: str
    card_id: str

    @property
    def email(self) -> str:
        return self.person.email

    @property
    def program_id(self) -> str:
        assert self.person.program_id is not None
        return self.person.program_id

    @property
    def totp_secret(self) -> str:
        return self.person.totp_secret

    @property
    def pin(self) -> str:
        return self.person.pin

    @property
    def user(self) -> User:
        return User.objects.get(id=self.person.user.id)

    @property
    def auth(self) -> dict[str, str]:
        """A new access token's header (as a new sign-in gives)."""
        return {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(self.user).access_token}"}

    @property
    def card(self) -> Card:
        return Card.objects.get(id=self.card_id)

    @property
    def account(self) -> Account:
        return Account.objects.get(id=self.account_id)

    @property
    def customer(self) -> Customer:
        return Customer.objects.get(id=self.customer_id)

    @property
    def program(self) -> Program:
        return Program.objects.get(id=self.program_id)

    def account_url(self, what: str, account_id: str | None = None) -> str:
        return f"/v1/customers/{self.customer_id}/accounts/{account_id or self.account_id}/{what}"

    def card_url(self, what: str = "", card_id: str | None = None) -> str:
        return self.account_url(f"cards/{card_id or self.card_id}{what}")


def card_customer(
    program: Program, name: str, kind: str = Customer.Kind.INDIVIDUAL, pin: str = ""
) -> CardCustomer:
    """A customer named `name` with its user, account and card (`nameOnCard` the name
    in capitals, as issuing makes it)."""
    customer = Customer.objects.create(program=program, sandbox=True, name=name, kind=kind)
    holder = person(program, pin=pin, customer=customer)
    account = funded_account(customer, "100000.00", **uk_account())
    card = card_issue(account=account, name_on_card=name)
    return CardCustomer(
        person=holder, customer_id=str(customer.id), account_id=str(account.id), card_id=str(card.id)
    )
