"""The accounts the batch benchmarks pay from: one program, a custodian with
`payers` client accounts of GBP 100,000.00 each and its user (TOTP set up).
Imported once Django is set up, inside a scratch database."""

from decimal import Decimal

import pyotp

from authn.models import User
from bankapi.models import Account, Custodian, Customer, Program
from bankapi.roles import Role
from payments.ledger import ledger_fund_account


def seed(payers: int) -> tuple[User, list[Account]]:
    program = Program.objects.create(name="Bench Batch Program", account_type=Program.AccountType.CONSUMER)
    custodian = Custodian.objects.create(program=program, name="Bench Custodian")
    accounts = []
    for index in range(payers):
        customer = Customer.objects.create(program=program, name=f"Bench Client {index}", custodian=custodian)
        account = Account.objects.create(
            program=program,
            customer=customer,
            name="Bench GBP",
            currency="GBP",
            sort_code="600000",
            account_number=f"{index:08d}",
        )
        ledger_fund_account(account, Decimal("100000.00"), key=f"bench-batch:{account.id}")
        accounts.append(account)
    user = User.objects.create(
        email="bench.custodian@example.com",
        program=program,
        role=Role.CUSTODIAN,
        custodian=custodian,
        totp_secret=pyotp.random_base32(),
        totp_confirmed=True,
    )
    return user, accounts
