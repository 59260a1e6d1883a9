"""Schedule seeding shared by the benches that run scheduled payments
(bench/scheduled_payments.py, the schedules step of bench/pipeline.py,
bench/clock_year.py): funded accounts of a program of their own, and monthly
schedules due on one day written in bulk, each row as `schedule_create` writes
it. Import it once Django is set up."""

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from bankapi.models import Account, Customer, Program
from payments.ledger import ledger_fund_account
from payments.models import ScheduledPayment
from payments.payees import Payee, ScheduleDetails, UkAccount

PAYEE = Payee(name="Bench Payee", account=UkAccount(sort_code="200000", account_number="55779911"))


def funded_accounts_seed(*, name: str, accounts: int, sandbox: bool, balance: Decimal) -> list[Account]:
    """A program of its own, one customer of it and `accounts` GBP accounts of
    that customer, each funded with `balance` through the ledger."""
    program = Program.objects.create(name=f"{name} program", account_type=Program.AccountType.CONSUMER)
    customer = Customer.objects.create(program=program, sandbox=sandbox, name=f"{name} customer")
    rows = Account.objects.bulk_create(
        Account(program=program, sandbox=sandbox, customer=customer, name=f"{name} {n}", currency="GBP")
        for n in range(accounts)
    )
    for account in rows:
        ledger_fund_account(account, balance, key=f"bench-schedules:{account.id}")
    return rows


def schedules_seed(
    accounts: Sequence[Account], count: int, day: date, amount: Decimal = Decimal("1.00")
) -> None:
    """`count` monthly schedules of `amount` GBP to PAYEE, first due `day`,
    spread over `accounts` in turn (each at its customer's time: a test
    clock's customer's rows are made at its clock's)."""
    ScheduledPayment.objects.bulk_create(
        (
            ScheduledPayment(
                program_id=account.program_id,
                sandbox=account.sandbox,
                customer_id=account.customer_id,
                account=account,
                frequency=ScheduledPayment.Frequency.MONTHLY,
                scheduled_date=day,
                next_run_date=day,
                amount=amount,
                currency="GBP",
                reference=f"Standing order {n}",
                details=ScheduleDetails(payee=PAYEE).to_stored(),
            )
            for n, account in ((n, accounts[n % len(accounts)]) for n in range(count))
        ),
        batch_size=1000,
    )
