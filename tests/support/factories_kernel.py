"""A populated world of every role, for the tests that call every route or run a
whole client flow.

The security matrix and the fuzzer put real ids in every path parameter and send
real tokens of every role, and the generated client signs in as a customer, a
custodian and another customer, so they need a customer with all it can own (accounts
of each kind, a beneficiary, a card, an application), its outsiders (another
customer of the program, a customer of a business program), a custodian with its
clients and a management user. `world_make()` makes all of it from the factories,
new for each test.
"""

import secrets
from dataclasses import dataclass

from bankapi.models import Account, Program
from cards.models import Card
from cards.services import card_issue
from onboarding.models import Application
from payments.models import Beneficiary
from tests.support.factories import (
    BeneficiaryFactory,
    CustodianSetup,
    ProgramFactory,
    SignedIn,
    custodian_with_clients,
    customer_user,
    funded_account,
    management_user,
)
from tests.support.factories_onboarding import application_of, company_application, legal_document_set

FULL = "100000.00"


def uk_account() -> dict[str, str]:
    """A sort code and a random account number, as the sandbox gives: the matrix
    looks for account numbers in every answer, so none may be a round number that
    a document or an example could hold (the factories count up from 10000000)."""
    return {"sort_code": "040004", "account_number": "".join(secrets.choice("0123456789") for _ in range(8))}


@dataclass
class World:
    consumer: Program  # international payments on, no cardholders
    business_program: Program  # cardholders and PIN confirmation on, no international payments
    customer: SignedIn  # the victim of the customer role
    account: Account  # its GBP account, 100,000.00
    short_reference_account: Account  # GBP, 100,000.00, references of 35 characters at most
    low_account: Account  # GBP, 5.00
    eur_account: Account  # EUR, 100,000.00
    beneficiary: Beneficiary
    card: Card  # on `account`
    application: Application
    customer2: SignedIn  # another customer of the consumer program
    customer2_account: Account
    business: SignedIn  # a customer of the business program
    business_account: Account
    company_application: Application  # the business customer's, with two owners
    custodian: CustodianSetup  # of the consumer program, two clients with a GBP account each
    management: SignedIn

    @property
    def customer_ids(self) -> dict[str, str]:
        """The customer's objects by the name of the path parameter that takes them
        (and, for its other accounts, a name of their own)."""
        return {
            "customerId": str(self.customer.customer.id),
            "accountId": str(self.account.id),
            "shortRefAccountId": str(self.short_reference_account.id),
            "lowBalanceAccountId": str(self.low_account.id),
            "eurAccountId": str(self.eur_account.id),
            "beneficiaryId": str(self.beneficiary.id),
            "cardId": str(self.card.id),
            "applicationId": str(self.application.id),
        }

    @property
    def customer_accounts(self) -> list[Account]:
        return [self.account, self.short_reference_account, self.low_account, self.eur_account]


def world_make() -> World:
    consumer = ProgramFactory(international_payments_enabled=True)
    business_program = ProgramFactory(
        account_type=Program.AccountType.BUSINESS, cardholders_enabled=True, pin_confirmation_enabled=True
    )
    legal_document_set(consumer)
    legal_document_set(business_program)
    customer = customer_user(consumer)
    account = funded_account(customer.customer, FULL, **uk_account())
    customer2 = customer_user(consumer)
    business = customer_user(business_program)
    custodian = custodian_with_clients(consumer)
    for client_account in custodian.accounts:  # numbered at random too (see uk_account)
        client_account.account_number = uk_account()["account_number"]
        client_account.save(update_fields=["account_number"])
    return World(
        consumer=consumer,
        business_program=business_program,
        customer=customer,
        account=account,
        short_reference_account=funded_account(customer.customer, FULL, reference_max=35, **uk_account()),
        low_account=funded_account(customer.customer, "5.00", **uk_account()),
        eur_account=funded_account(customer.customer, FULL, currency="EUR"),
        beneficiary=BeneficiaryFactory(
            customer=customer.customer, sort_code="040004", account_number="12345678"
        ),
        card=card_issue(account=account, name_on_card=customer.customer.name),
        application=application_of(customer.customer, applicant_email=customer.email),
        customer2=customer2,
        customer2_account=funded_account(customer2.customer, FULL, **uk_account()),
        business=business,
        business_account=funded_account(business.customer, FULL, **uk_account()),
        company_application=company_application(business.customer),
        custodian=custodian,
        management=management_user(),
    )
