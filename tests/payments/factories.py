"""Test data for payments: beneficiaries and funded accounts (through the ledger)."""

import uuid
from decimal import Decimal

import factory

from bankapi.models import Account, Customer
from payments.ledger import ledger_fund_account
from payments.models import Beneficiary


class BeneficiaryFactory(factory.django.DjangoModelFactory):
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
