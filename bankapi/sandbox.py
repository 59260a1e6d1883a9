"""`bootstrap_sandbox`, kernel part: programs, customers, custodian, accounts.

Each app contributes a step (settings.SANDBOX_BOOTSTRAP_STEPS) that reads and
extends one `SandboxContext`. Every step finds its objects by natural key before
creating them, so a rerun makes nothing twice; secrets printed once (passwords,
TOTP seeds) are taken from the stored manifest so a rerun prints the same object.
"""

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from schwifty import IBAN

from bankapi.models import Account, Custodian, Customer, Program

CONSUMER_PROGRAM = "Sandbox Consumer Program"
BUSINESS_PROGRAM = "Sandbox Business Program"
FULL_BALANCE = Decimal("100000.00")
LOW_BALANCE = Decimal("5.00")
# Real banks' codes, so the IBANs pass every registry check a pain.001 generator
# or a payee's bank makes: the sort code 040004 is Monzo's (bank code MONZ), and
# EUR accounts are held at a German bank (Commerzbank, Bankleitzahl 37040044).
GB_BANK_CODE = "MONZ"
EUR_BANK_CODE = "37040044"


@dataclass
class SandboxContext:
    previous: dict[str, Any]
    output: dict[str, Any] = field(default_factory=dict)
    # Objects steps hand to later steps, e.g. "customer" -> Customer.
    objects: dict[str, Any] = field(default_factory=dict)
    # (account, target balance): funded through the ledger by the payments step.
    funding: list[tuple[Account, Decimal]] = field(default_factory=list)

    def remembered(self, path: str, make: Callable[[], str]) -> str:
        """A value printed by an earlier run (dotted path), or a new one."""
        node: Any = self.previous
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, str) and node else make()


def new_password() -> str:
    return "Sbx-" + secrets.token_urlsafe(15)


def _program(name: str, **settings_: Any) -> Program:
    program, _ = Program.objects.get_or_create(name=name, defaults=settings_)
    return program


def _customer(
    program: Program, name: str, kind: str = Customer.Kind.INDIVIDUAL, custodian: Custodian | None = None
) -> Customer:
    customer, _ = Customer.objects.get_or_create(
        program=program,
        sandbox=True,
        name=name,
        defaults={"kind": kind, "custodian": custodian},
    )
    return customer


def _digits(count: int) -> str:
    return "".join(secrets.choice("0123456789") for _ in range(count))


def _account(
    ctx: SandboxContext,
    customer: Customer,
    name: str,
    currency: str,
    balance: Decimal,
    reference_max: int = 140,
) -> Account:
    defaults: dict[str, Any] = {"currency": currency, "reference_max": reference_max}
    if currency == "GBP":
        defaults.update(sort_code="040004", account_number=_digits(8))
    account, _ = Account.objects.get_or_create(
        program=customer.program, sandbox=True, customer=customer, name=name, defaults=defaults
    )
    if not account.iban:
        # An update of the one field: saving the whole account would put back the
        # ledger fields it was loaded with.
        account.iban = sandbox_iban(account)
        Account.objects.filter(pk=account.pk).update(iban=account.iban)
    ctx.funding.append((account, balance))
    return account


# Customers made on demand (the sandbox app) get their accounts the same way.
sandbox_account = _account


def sandbox_iban(account: Account) -> str:
    """A valid IBAN for a sandbox account: a GB IBAN embedding the sort code and
    account number, or a German IBAN for a euro account."""
    if account.sort_code and account.account_number:
        return str(
            IBAN.generate(
                "GB", bank_code=GB_BANK_CODE + account.sort_code, account_code=account.account_number
            )
        )
    return str(IBAN.generate("DE", bank_code=EUR_BANK_CODE, account_code=_digits(10)))


def _customer_with_accounts(
    ctx: SandboxContext, key: str, program: Program, name: str, kind: str = Customer.Kind.INDIVIDUAL
) -> None:
    customer = _customer(program, name, kind)
    ctx.objects[key] = customer
    main = _account(ctx, customer, "Main GBP", "GBP", FULL_BALANCE)
    euro = _account(ctx, customer, "Main EUR", "EUR", FULL_BALANCE)
    ctx.output[key] = {
        "customerId": str(customer.id),
        "accountId": str(main.id),
        "shortRefAccountId": str(_account(ctx, customer, "Short reference GBP", "GBP", FULL_BALANCE, 35).id),
        "lowBalanceAccountId": str(_account(ctx, customer, "Low balance GBP", "GBP", LOW_BALANCE).id),
        "eurAccountId": str(euro.id),
        "accountIban": main.iban,
        "eurAccountIban": euro.iban,
    }


def bootstrap(ctx: SandboxContext) -> None:
    consumer = _program(
        CONSUMER_PROGRAM,
        account_type=Program.AccountType.CONSUMER,
        international_payments_enabled=True,
        cardholders_enabled=False,
    )
    business = _program(
        BUSINESS_PROGRAM,
        account_type=Program.AccountType.BUSINESS,
        international_payments_enabled=False,
        cardholders_enabled=True,
        pin_confirmation_enabled=True,
    )
    ctx.objects.update(consumer_program=consumer, business_program=business)
    ctx.output["consumerProgramId"] = str(consumer.id)
    ctx.output["businessProgramId"] = str(business.id)

    _customer_with_accounts(ctx, "customer", consumer, "Sandbox Customer One")
    _customer_with_accounts(ctx, "customer2", consumer, "Sandbox Customer Two")
    _customer_with_accounts(ctx, "business", business, "Sandbox Business Ltd", Customer.Kind.COMPANY)

    custodian, _ = Custodian.objects.get_or_create(program=consumer, sandbox=True, name="Sandbox Custodian")
    ctx.objects["custodian"] = custodian
    accounts = []
    for index in (1, 2):
        customer = _customer(consumer, f"Custodian Client {index}", custodian=custodian)
        account = _account(ctx, customer, "Client GBP", "GBP", FULL_BALANCE)
        accounts.append(
            {
                "customerId": str(customer.id),
                "accountId": str(account.id),
                "sortCode": account.sort_code,
                "accountNumber": account.account_number,
                "iban": account.iban,
            }
        )
    ctx.output["custodian"] = {
        "programId": str(consumer.id),
        "customerIds": [entry["customerId"] for entry in accounts],
        "accounts": accounts,
    }
    ctx.output["limits"] = {
        "perPayment": "25000.00",
        "dailyOutbound": "500000.00",
        "reviewThreshold": "10000.00",
        "fee": "0.00",
    }
