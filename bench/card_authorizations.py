"""Benchmark: card authorizations per second against payments per second, on
the same run, and a clearing run of 10,000 authorizations.

    .venv/bin/python bench/card_authorizations.py [--requests 500] [--customers 20] [--clearings 10000]

Builds a throwaway test database from the configured one (SQLite by default;
set DATABASE_URL for PostgreSQL) and seeds `--customers` sandbox customers,
each with a funded GBP account, a saved beneficiary, a card and a signed-in
user. Then, in one process and one thread, through the routes (Django's test
client: the whole request path, the network aside), alternating rounds of
each so both meet the same database state:
- `--requests` payments (`POST .../payments`, each with its own Idempotency-Key);
- `--requests` authorizations (`POST /v1/sandbox/cards/{cardId}/authorizations`,
  each with its own key);
and prints each rate and their ratio (authorizations / payments; the target
is at least 1). Last, it makes `--clearings` authorizations (through the
service, not timed) and times one clearing run of all of them
(`cards.authorizations.authorizations_clear_run`, chunks of `--chunk`),
printing clearings per second and queries per clearing. The test database is
dropped afterwards.
"""

import argparse
import os
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A throwaway test database and development secrets, even when DATABASE_URL is set.
os.environ.setdefault("BANKAPI_ENV", "development")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402
from scratch import scratch_database  # noqa: E402

from authn.models import User  # noqa: E402
from authn.tokens import tokens_issue  # noqa: E402
from bankapi.models import Account, Customer, Program  # noqa: E402
from cards.authorizations import AuthorizationOrder, authorizations_clear_run, card_authorize  # noqa: E402
from cards.models import Card  # noqa: E402
from cards.services import card_issue  # noqa: E402
from payments.ledger import ledger_check, ledger_fund_account  # noqa: E402
from payments.models import Beneficiary  # noqa: E402


class QueryCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


class Spender:
    """A customer's account, card, beneficiary and access token."""

    def __init__(self, program: Program, n: int) -> None:
        customer = Customer.objects.create(program=program, name=f"Bench Customer {n}")
        self.account = Account.objects.create(
            program=program, customer=customer, name=f"Bench {n}", currency="GBP"
        )
        ledger_fund_account(self.account, Decimal("10000000.00"), key=f"bench:{self.account.id}")
        self.card = card_issue(account=self.account, name_on_card=f"BENCH {n}")
        self.beneficiary = Beneficiary.objects.create(
            program=program,
            customer=customer,
            name="Bench Payee",
            account_kind=Beneficiary.AccountKind.UK,
            sort_code="200000",
            account_number=f"{n:08d}",
        )
        user = User.objects.create(email=f"bench{n}@example.test", program=program, customer=customer)
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {tokens_issue(user).access_token}"}


def _pay(client: APIClient, spender: Spender) -> None:
    account = spender.account
    answer = client.post(
        f"/v1/customers/{account.customer_id}/accounts/{account.id}/payments",
        {"amount": "1.00", "reference": "Bench", "beneficiaryId": str(spender.beneficiary.id)},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **spender.auth,
    )
    assert answer.status_code == 200, answer.content


def _authorize(client: APIClient, spender: Spender) -> None:
    answer = client.post(
        f"/v1/sandbox/cards/{spender.card.id}/authorizations",
        {"amount": "1.00", "currency": "GBP", "merchantName": "Bench Shop"},
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **spender.auth,
    )
    assert answer.status_code == 200 and answer.json()["data"]["status"] == "PENDING", answer.content


def _rates(spenders: list[Spender], requests: int, rounds: int = 4) -> tuple[float, float]:
    client = APIClient()
    # One of each first: the first request of a route builds what later ones reuse.
    _pay(client, spenders[0])
    _authorize(client, spenders[0])
    spent = {"payments": 0.0, "authorizations": 0.0}
    per_round = max(requests // rounds, 1)
    for round_ in range(rounds):
        for name, call in (("payments", _pay), ("authorizations", _authorize))[
            :: 1 if round_ % 2 == 0 else -1
        ]:
            started = time.perf_counter()
            for n in range(per_round):
                call(client, spenders[n % len(spenders)])
            spent[name] += time.perf_counter() - started
    done = per_round * rounds
    return done / spent["payments"], done / spent["authorizations"]


def _clearing_run(spenders: list[Spender], clearings: int, chunk: int) -> None:
    cards = {
        spender.card.id: Card.objects.select_related("account", "program").get(id=spender.card.id)
        for spender in spenders
    }
    order = AuthorizationOrder(amount=Decimal("2.50"), currency="GBP", merchant_name="Bench Shop")
    started = time.perf_counter()
    ids = [
        card_authorize(card=cards[spenders[n % len(spenders)].card.id], order=order).id
        for n in range(clearings)
    ]
    made = time.perf_counter() - started
    print(f"Made {clearings} authorizations through the service in {made:.2f} s ({clearings / made:.0f}/s)")
    counter = QueryCounter()
    with connection.execute_wrapper(counter):
        started = time.perf_counter()
        cleared = authorizations_clear_run(ids, chunk=chunk)
        elapsed = time.perf_counter() - started
    assert cleared == clearings, f"cleared {cleared} of {clearings}"
    print(f"Cleared {cleared} authorizations in {elapsed:.2f} s")
    print(f"  {cleared / elapsed:.0f} clearings/second")
    print(f"  {counter.count / cleared:.2f} queries/clearing ({counter.count} queries)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--clearings", type=int, default=10_000)
    parser.add_argument("--chunk", type=int, default=500)
    args = parser.parse_args()
    # The bench's users sign in with tokens issued here; nothing is throttled.
    settings.REQUEST_BUDGET_PER_TOKEN = 10**9
    settings.REQUEST_BUDGET_PER_ADDRESS = 10**9

    with scratch_database():
        print(f"Seeding {args.customers} customers ({connection.vendor})...")
        program = Program.objects.create(name="Bench Program", account_type=Program.AccountType.CONSUMER)
        Program.objects.filter(id=program.id).update(
            per_payment_limit=Decimal("100000.00"), daily_outbound_limit=Decimal("100000000.00")
        )
        spenders = [Spender(program, n) for n in range(args.customers)]
        payments, authorizations = _rates(spenders, args.requests)
        print(f"Payments through the route: {payments:.0f}/s")
        print(f"Authorizations through the route: {authorizations:.0f}/s")
        _clearing_run(spenders, args.clearings, args.chunk)
        report = ledger_check()
        assert report.ok, report
        print("check_ledger: ok")
        print(f"ratio={authorizations / payments:.2f}")


if __name__ == "__main__":
    main()
