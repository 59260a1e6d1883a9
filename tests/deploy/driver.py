"""Data set-up and read-back for the deployment test, run as a process of the
deployment itself (its environment, its database through PgBouncer):

    python -m tests.deploy.driver setup          -> JSON: token, ids
    python -m tests.deploy.driver batch ID...    -> JSON: the submitted batch's id
    python -m tests.deploy.driver state JSON     -> JSON: what was paid
    python -m tests.deploy.driver prepared JSON  -> JSON: statements prepared by payments

Only the service's own code: no test tool is imported here.
"""

import json
import os
import sys
import uuid
from decimal import Decimal

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.db import transaction  # noqa: E402

from authn.models import User  # noqa: E402
from authn.tokens import tokens_issue  # noqa: E402
from bankapi.models import Account, Custodian, Customer, Program  # noqa: E402
from bankapi.roles import Role  # noqa: E402
from batches.models import Batch, BatchItem  # noqa: E402
from payments.ledger import ledger_fund_account  # noqa: E402
from payments.models import PaymentRequest, ScheduledPayment, ScheduleRun  # noqa: E402
from payments.payees import Payee, UkAccount  # noqa: E402
from payments.services.acceptance import PaymentInstruction  # noqa: E402
from payments.services.schedules import schedule_create, utc_today  # noqa: E402
from tests.batches.helpers import batch_submitted  # noqa: E402

OPENING = Decimal("1000000.00")
PAYEE = {"name": "Jane Payee", "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"}}
PAYEE_AS_PAID = Payee(name="Jane Payee", account=UkAccount(sort_code="200000", account_number="55779911"))
PAYERS = 10
SCHEDULES = 200


def _account(program: Program, customer: Customer, number: int) -> Account:
    account = Account.objects.create(
        program=program,
        sandbox=False,
        customer=customer,
        name=f"Deploy {number}",
        currency="GBP",
        sort_code="400000",
        account_number=f"{number:08d}",
    )
    ledger_fund_account(account, OPENING, key=f"deploy-funding:{account.id}")
    return account


def setup() -> dict:
    with transaction.atomic():
        program = Program.objects.create(name=f"Deploy {uuid.uuid4()}", account_type="consumer")
        # A customer paying with an Idempotency-Key over HTTP.
        customer = Customer.objects.create(program=program, sandbox=False, name="Deploy Customer")
        account = _account(program, customer, 1)
        user = User.objects.create(
            email="deploy.customer@example.com", program=program, sandbox=False, customer=customer
        )
        # A custodian whose clients pay a batch, and whose clients' standing orders are due today.
        custodian = Custodian.objects.create(program=program, sandbox=False, name="Deploy Custodian")
        payers = [
            _account(
                program,
                Customer.objects.create(
                    program=program, sandbox=False, name=f"Client {n}", custodian=custodian
                ),
                100 + n,
            )
            for n in range(PAYERS)
        ]
        User.objects.create(
            email="deploy.custodian@example.com",
            program=program,
            sandbox=False,
            role=Role.CUSTODIAN,
            custodian=custodian,
        )
        schedules = [
            schedule_create(
                account=payers[n % PAYERS],
                instruction=PaymentInstruction(
                    amount=Decimal("1.00"), currency="GBP", reference="Standing order", payee=PAYEE_AS_PAID
                ),
                anchor=utc_today(),
                frequency="WEEKLY",
            )
            for n in range(SCHEDULES)
        ]
    return {
        "token": tokens_issue(user).access_token,
        "customerId": str(customer.id),
        "accountId": str(account.id),
        "payerIds": [str(payer.id) for payer in payers],
        "scheduleIds": [str(schedule.id) for schedule in schedules],
        "today": utc_today().isoformat(),
    }


def batch(count: int) -> dict:
    user = User.objects.get(email="deploy.custodian@example.com")
    payers = list(Account.objects.filter(customer__custodian=user.custodian).order_by("account_number"))
    payments = [
        {
            "payer": {"account": {"type": "uk", "sortCode": p.sort_code, "accountNumber": p.account_number}},
            "payee": PAYEE,
            "reference": f"Batch item {n}",
            "amount": "1.00",
        }
        for n, p in enumerate(payers[n % len(payers)] for n in range(count))
    ]
    # Submitting queues the batch's processing, after commit, to the workers.
    return {"batchId": str(batch_submitted(user, payments).id)}


def state(ids: dict) -> dict:
    account = Account.objects.get(id=ids["accountId"])
    answer: dict = {
        "balance": str(account.balance),
        "paymentRequests": PaymentRequest.objects.filter(account=account).count(),
        "schedulePayments": {
            str(schedule_id): PaymentRequest.objects.filter(schedule_id=schedule_id).count()
            for schedule_id in ids["scheduleIds"]
        },
        "scheduleRuns": ScheduleRun.objects.filter(schedule_id__in=ids["scheduleIds"]).count(),
        "schedulesAdvanced": ScheduledPayment.objects.filter(id__in=ids["scheduleIds"])
        .exclude(next_run_date=ids["today"])
        .count(),
        "payerBalances": [str(a.balance) for a in Account.objects.filter(id__in=ids["payerIds"])],
    }
    if ids.get("batchId"):
        items = BatchItem.objects.filter(batch_id=ids["batchId"])
        answer["batch"] = {
            "status": Batch.objects.get(id=ids["batchId"]).status,
            "success": items.filter(status="SUCCESS").count(),
            "payments": PaymentRequest.objects.filter(batch_item__batch_id=ids["batchId"]).count(),
            "distinctPayments": len(set(items.values_list("payment_id", flat=True))),
        }
    return answer


def prepared(ids: dict) -> dict:
    """Six payments through the payment route, in this process, on this
    deployment's settings; then the statements PostgreSQL keeps prepared on
    the connections they used (this process's pool lends them in turn, each a
    few times). Through PgBouncer in transaction pooling, none may be."""
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    client = Client(
        HTTP_AUTHORIZATION=f"Bearer {ids['token']}",
        HTTP_HOST="api.example.com",
        HTTP_X_FORWARDED_PROTO="https",
    )
    path = f"/v1/customers/{ids['customerId']}/accounts/{ids['accountId']}/payments"
    statuses = [
        client.post(
            path,
            {"amount": "0.01", "reference": "Prepared", "payee": PAYEE},
            content_type="application/json",
            HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        ).status_code
        for _ in range(6)
    ]
    statements: set[str] = set()
    for _ in range(4):
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            statements |= {row[0] for row in cursor.fetchall()}
        connection.close()
    return {
        "setting": settings.DATABASE_PREPARED_STATEMENTS,
        "statuses": statuses,
        "prepared": sorted(statements),
    }


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "setup":
        result = setup()
    elif command == "batch":
        result = batch(int(arguments[0]))
    elif command == "state":
        result = state(json.loads(arguments[0]))
    elif command == "prepared":
        result = prepared(json.loads(arguments[0]))
    else:
        sys.exit(f"unknown command {command!r}")
    print(json.dumps(result))
