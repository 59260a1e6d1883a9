"""Single payments, batch items and schedule runs accept and refuse alike.

Each row of the table sets up the same account (balance, what it has sent on
which day) and program limits three times, pays the same amount through each
path's real entry point (the payment route, with the payer's own token; a
submitted batch's processing; the schedule runner) and compares what each
answered and left on the account with what the acceptance decision says for
that account.
"""

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from rest_framework.test import APIClient

from authn.models import User
from bankapi.models import Account, Custodian, Customer, Program
from batches.services.processing import batch_process
from payments.decision import Accepted, Instruction, Rules, Snapshot, decide
from payments.errors import PaymentErrorCode
from payments.ledger import ledger_check
from payments.models import PaymentRequest, ScheduleRun
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction
from payments.services.schedules import schedule_create, scheduled_payments_run
from tests.batches.conftest import PAYEE_UK, payment
from tests.batches.helpers import batch_submitted
from tests.payments.conftest import payments_url
from tests.support.auth import access_header
from tests.support.factories import funded_account

pytestmark = pytest.mark.django_db

DAY = date(2026, 3, 10)
NOON = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
MIDNIGHT = datetime(2026, 3, 10, tzinfo=UTC)
LIMITS = {
    "per_payment_limit": Decimal("1000.00"),
    "daily_outbound_limit": Decimal("5000.00"),
    "review_threshold": Decimal("800.00"),
    "fee_per_payment": Decimal("1.50"),
}


@dataclass(frozen=True)
class Case:
    name: str
    balance: str
    amount: str
    sent: str = "0.00"
    sent_on: date | None = None
    now: datetime = NOON
    limits: tuple[tuple[str, str], ...] = ()


YESTERDAY = DAY - timedelta(days=1)
CASES = [
    Case("per-payment max exactly", "2000.00", "1000.00"),
    Case("per-payment max plus a cent", "2000.00", "1000.01"),
    Case("daily: exactly what is left", "2000.00", "500.00", sent="4500.00", sent_on=DAY),
    Case("daily: a cent over what is left", "2000.00", "500.01", sent="4500.00", sent_on=DAY),
    Case("daily: limit lowered below what was sent", "2000.00", "0.01", sent="5200.00", sent_on=DAY),
    Case("funds: exactly amount plus fee", "101.50", "100.00"),
    Case("funds: a cent short of amount plus fee", "101.49", "100.00"),
    Case("review: a cent below the threshold", "2000.00", "799.99"),
    Case("review: exactly the threshold", "2000.00", "800.00"),
    Case("no fee", "100.00", "100.00", limits=(("fee_per_payment", "0.00"),)),
    Case("rollover: yesterday's count, last instant of yesterday", "2000.00", "0.01", "5000.00", YESTERDAY,
         MIDNIGHT - timedelta(microseconds=1)),
    Case("rollover: yesterday's count, midnight UTC", "2000.00", "500.00", "5000.00", YESTERDAY, MIDNIGHT),
]  # fmt: skip


@pytest.fixture
def payer_customer(custodian: Custodian) -> Customer:
    return Customer.objects.create(program_id=custodian.program_id, name="Table Client", custodian=custodian)


@pytest.fixture
def payer_user(payer_customer: Customer) -> User:
    return User.objects.create_user(
        "table.client@sandbox.example",
        "Table-Client-Password-42",
        program_id=payer_customer.program_id,
        role="customer",
        customer=payer_customer,
    )


def prepared_account(customer: Customer, case: Case, number: int) -> Account:
    account = funded_account(customer, case.balance, sort_code="300000", account_number=f"{number:08d}")
    Account.objects.filter(id=account.id).update(outbound_day=case.sent_on, outbound_total=Decimal(case.sent))
    return Account.objects.get(id=account.id)


def account_after(account: Account) -> tuple[Decimal, date | None, Decimal]:
    row = Account.objects.get(id=account.id)
    return row.balance, row.outbound_day, row.outbound_total


def by_single(account: Account, case: Case, auth: dict[str, str]) -> str:
    response = APIClient().post(
        payments_url(account.customer_id, account.id),
        {"amount": case.amount, "reference": "Table", "payee": PAYEE_UK},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )
    if response.status_code == 200:
        return PaymentRequest.objects.get(id=response.json()["data"]["bankTransfer"]["requestId"]).status
    assert response.status_code == 422, response.json()
    return f"{response.json()['code']}: {response.json()['message']}"


def by_batch(account: Account, case: Case, user) -> str:
    batch = batch_submitted(user, [payment(account, case.amount, reference="Table")])
    batch_process(str(batch.id))
    item = batch.items.get()
    return item.payment.status if item.status == "SUCCESS" else item.error


def by_schedule(account: Account, case: Case) -> str:
    instruction = PaymentInstruction(
        amount=Decimal(case.amount),
        currency=account.currency,
        reference="Table",
        payee=Payee(name="Jane Payee", account=UkAccount(sort_code="200000", account_number="55779911")),
    )
    today = case.now.astimezone(UTC).date()
    schedule = schedule_create(account=account, instruction=instruction, anchor=today, frequency="NEVER")
    scheduled_payments_run(today)
    run = ScheduleRun.objects.get(schedule=schedule)
    if run.outcome == ScheduleRun.Outcome.FAILED:
        return run.reason
    return run.payment_request.status


def expected(program: Program, account: Account, case: Case) -> tuple[str, tuple]:
    amount = Decimal(case.amount)
    decided = decide(
        Rules.of(program), Snapshot.of(account), Instruction(amount, amount, account.currency), now=case.now
    )
    if isinstance(decided, Accepted):
        after = decided.after
        return decided.status, (after.balance, after.outbound_day, after.outbound_total)
    return f"{decided.code}: {decided.message}", account_after(account)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_single_batch_and_schedule_paths_agree_with_the_decision(
    case, custodian_user, payer_customer, payer_user
):
    Program.objects.filter(id=payer_customer.program_id).update(**{**LIMITS, **dict(case.limits)})
    program = Program.objects.get(id=payer_customer.program_id)
    answers = {}
    with time_machine.travel(case.now, tick=False):
        # Issued at the table's moment, so the token is valid then.
        payer_auth = access_header(payer_user.email, str(payer_user.program_id))
        for number, path in enumerate(("single", "batch", "schedule"), start=1):
            account = prepared_account(payer_customer, case, number)
            want = expected(program, account, case)
            if path == "single":
                got = by_single(account, case, payer_auth)
            elif path == "batch":
                got = by_batch(account, case, custodian_user)
            else:
                got = by_schedule(account, case)
            answers[path] = (got, account_after(account))
            outcome, state = want
            if path == "batch" and outcome.startswith(PaymentErrorCode.INSUFFICIENT_FUNDS):
                # A batch takes each payer's whole total (fees included) when it
                # is funded, before acceptance; an account that cannot cover it
                # is refused there, in words that name the batch.
                assert (got.split(":")[0], answers[path][1]) == (PaymentErrorCode.INSUFFICIENT_FUNDS, state)
            else:
                assert answers[path] == want, path
    # Whatever was accepted is held or not the same way, and the ledger balances.
    assert len({answer[1] for answer in answers.values()}) == 1
    assert PaymentRequest.objects.filter(account__customer=payer_customer).count() in (0, 3)
    assert ledger_check().ok
