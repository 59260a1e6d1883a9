"""What the payments bench pays from: customers with funded accounts and
beneficiaries (seeded through the ORM and the ledger service), and an account
that already made a day of payments."""

import secrets
from dataclasses import dataclass
from decimal import Decimal

AMOUNT = Decimal("1.00")

FUNDING = Decimal("1000000.00")

DAY_PAYMENTS_DEFAULT = 100_000


@dataclass
class Target:
    customer_id: str
    account_id: str
    beneficiary_id: str
    token: str

    @property
    def path(self) -> str:
        return f"/v1/customers/{self.customer_id}/accounts/{self.account_id}/payments"

    def line(self) -> str:
        return f"{self.path} {self.token} {self.beneficiary_id}"


def seed(customers: int) -> tuple[list[Target], dict[str, Target]]:
    """`customers` spread customers plus one each for the hot, in-process and
    full-day runs, each with a funded GBP account, a beneficiary and a token."""
    from authn.models import User
    from authn.tokens import ACCESS, encode_token
    from bankapi.models import Account, Customer, Program
    from bankapi.roles import Role
    from payments.ledger import ledger_fund_account
    from payments.models import Beneficiary

    program = Program.objects.create(name="Bench program", account_type=Program.AccountType.CONSUMER)

    def make(name: str) -> Target:
        customer = Customer.objects.create(program=program, sandbox=False, name=name)
        user = User(
            email=f"{name.lower().replace(' ', '-')}@bench.example",
            program=program,
            sandbox=False,
            role=Role.CUSTOMER,
            customer=customer,
        )
        user.set_unusable_password()
        user.save()
        account = Account.objects.create(
            program=program, sandbox=False, customer=customer, name=name, currency="GBP"
        )
        ledger_fund_account(account, FUNDING, key=f"bench-funding:{account.id}")
        beneficiary = Beneficiary.objects.create(
            program=program,
            sandbox=False,
            customer=customer,
            name=f"{name} payee",
            account_kind=Beneficiary.AccountKind.UK,
            sort_code="200000",
            account_number=f"{secrets.randbelow(10**8):08d}",
        )
        return Target(
            customer_id=str(customer.id),
            account_id=str(account.id),
            beneficiary_id=str(beneficiary.id),
            token=encode_token(user, ACCESS),
        )

    spread = [make(f"Spread {n}") for n in range(customers)]
    special = {name: make(f"Bench {name}") for name in ("hot", "inprocess", "fullday")}
    return spread, special


def seed_day_of_payments(target: Target, count: int) -> None:
    """`count` accepted payments of AMOUNT today on the target's account: one made
    by the acceptance service, then copied in bulk with everything acceptance
    writes (its ledger movement and postings, the PENDING request, the balance
    and the day's usage), so the copies follow whatever the schema holds."""
    from django.db import connection, transaction
    from django.db.models import BigAutoField, F

    from bankapi.models import Account
    from payments.models import (
        Beneficiary,
        LedgerPosting,
        LedgerTransaction,
        PaymentRequest,
    )
    from payments.services.acceptance import PaymentInstruction, payment_accept

    account = Account.objects.get(id=target.account_id)
    beneficiary = Beneficiary.objects.get(id=target.beneficiary_id)
    template = payment_accept(
        account=account,
        instruction=PaymentInstruction(
            amount=AMOUNT,
            currency=account.currency,
            reference="Bench",
            beneficiary=beneficiary,
            payee=beneficiary.payee(),
        ),
    )
    copies = count - 1
    name = connection.ops.quote_name

    def copy_sql(model, source: str, where: str, replace: dict[str, str]) -> str:
        columns = [
            field.column for field in model._meta.concrete_fields if not isinstance(field, BigAutoField)
        ]
        chosen = [replace.get(column, f"{source}.{name(column)}") for column in columns]
        # In copy order, so the postings' ids follow their running balances.
        return (
            f"INSERT INTO {name(model._meta.db_table)} ({', '.join(map(name, columns))}) "
            f"SELECT {', '.join(chosen)} FROM {name(model._meta.db_table)} {source}, bench_day WHERE {where} "
            "ORDER BY bench_day.n"
        )

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE bench_day ON COMMIT DROP AS SELECT gen_random_uuid() AS tx_id, "
            "gen_random_uuid() AS request_id, n FROM generate_series(1, %s) AS n",
            [copies],
        )
        cursor.execute(
            copy_sql(LedgerTransaction, "t", "t.id = %s", {"id": "bench_day.tx_id"}), [template.acceptance_id]
        )
        # The n-th copy leaves the account's balance n debits below the template's
        # (null stays null on system accounts).
        cursor.execute(
            copy_sql(
                LedgerPosting,
                "p",
                "p.transaction_id = %s",
                {
                    "transaction_id": "bench_day.tx_id",
                    "balance_after": "p.balance_after + bench_day.n * p.amount",
                    # Each copy's customer posting names its own request.
                    "request_id": "CASE WHEN p.request_id IS NOT NULL THEN bench_day.request_id END",
                },
            ),
            [template.acceptance_id],
        )
        cursor.execute(
            copy_sql(
                PaymentRequest,
                "r",
                "r.id = %s",
                {"id": "bench_day.request_id", "acceptance_id": "bench_day.tx_id"},
            ),
            [template.id],
        )
        moved = copies * AMOUNT
        Account.objects.filter(id=account.id).update(
            balance=F("balance") - moved, outbound_total=F("outbound_total") + moved
        )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {name(PaymentRequest._meta.db_table)}")
