"""Conservation of money under concurrency, on PostgreSQL.

5,000 random operations from 16 threads across 50 accounts in two currencies:
payments (some refused for funds, some held for review), settlements, failures
and review approvals, racing on the same accounts and the same requests. Then:

- per currency, the postings of all accounts sum to zero (`ledger_check`), and
  every stored balance equals its postings;
- the customers' balances went down by exactly what left through settlement
  (amount plus fee), to the cent: a failed or refused payment cost nothing;
- clearing is back to zero, the outside world received exactly the settled
  amounts and the fee account exactly their fees;
- no balance was ever seen below zero, by a watcher sampling throughout.

`CONSERVATION_SEED` replays a run; the seed is printed with the figures.
"""

import os
import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

from django.db import connection
from django.db.models import Min, Sum

from bankapi.errors import ApiError
from bankapi.models import Account, Customer, Program
from payments.ledger import ledger_check, ledger_fund_account, system_account_for
from payments.models import LedgerPosting, PaymentRequest, SystemAccount
from payments.payees import Payee, UkAccount
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.settlement import payment_fail, payment_review_approve, payment_settle
from tests.conftest import requires_postgres
from tests.proof.conftest import report_figures

OPERATIONS = 5000
THREADS = 16
ACCOUNTS = 50
CURRENCIES = ("GBP", "EUR")
FEE = Decimal("0.10")
REVIEW_THRESHOLD = Decimal("90.00")
CENT = Decimal("0.01")
PAYEE = Payee(name="Conservation Payee", account=UkAccount(sort_code="040004", account_number="12345678"))

Status = PaymentRequest.Status


def _world() -> tuple[Program, list[Account]]:
    program = Program.objects.create(
        name=f"Conservation {uuid.uuid4().hex[:8]}",
        account_type=Program.AccountType.CONSUMER,
        fee_per_payment=FEE,
        review_threshold=REVIEW_THRESHOLD,
        per_payment_limit=Decimal("1000.00"),
        daily_outbound_limit=Decimal("1000000.00"),
    )
    seed = random.Random(7)
    accounts = []
    for index in range(ACCOUNTS):
        customer = Customer.objects.create(program=program, sandbox=True, name=f"Saver {index}")
        account = Account.objects.create(
            program=program,
            sandbox=True,
            customer=customer,
            name=f"Saver {index}",
            currency=CURRENCIES[index % len(CURRENCIES)],
        )
        opening = Decimal(seed.randrange(20000, 600000)) * CENT  # 200.00 to 6,000.00
        ledger_fund_account(account, opening, key=f"conservation:{account.id}")
        accounts.append(account)
    return program, accounts


def _customer_total(program: Program, currency: str) -> Decimal:
    return Account.objects.filter(program=program, currency=currency).aggregate(total=Sum("balance"))[
        "total"
    ] or Decimal("0")


def _system_total(program: Program, kind: str, currency: str) -> Decimal:
    system = system_account_for(program, True, kind, currency)
    return LedgerPosting.objects.filter(system_account=system).aggregate(total=Sum("amount"))[
        "total"
    ] or Decimal("0")


class Run:
    """The shared state of the threads: requests made so far and outcome counts."""

    def __init__(self, accounts: list[Account], seed: int):
        self.accounts = accounts
        self.seed = seed
        self.requests: list[uuid.UUID] = []
        self.lock = threading.Lock()
        self.outcomes: Counter = Counter()

    def count(self, outcome: str) -> None:
        with self.lock:
            self.outcomes[outcome] += 1

    def pick_request(self, rng: random.Random) -> PaymentRequest | None:
        """One of the requests not yet seen settled or failed (threads may race for it)."""
        with self.lock:
            if not self.requests:
                return None
            request_id = rng.choice(self.requests)
        return PaymentRequest.objects.get(id=request_id)

    def closed(self, request: PaymentRequest) -> None:
        with self.lock:
            if request.id in self.requests:
                self.requests.remove(request.id)

    def one(self, rng: random.Random) -> None:
        roll = rng.random()
        try:
            if roll < 0.6:
                account = rng.choice(self.accounts)
                amount = Decimal(rng.randrange(1, 12000)) * CENT  # 0.01 to 119.99
                request = payment_accept(
                    account=account,
                    instruction=PaymentInstruction(
                        amount=amount, currency=account.currency, reference="Conservation", payee=PAYEE
                    ),
                )
                with self.lock:
                    self.requests.append(request.id)
                self.count(
                    "accepted (held for review)" if request.status == Status.PENDING_TM else "accepted"
                )
                return
            request = self.pick_request(rng)
            if request is None:
                self.count("nothing to act on yet")
            elif roll < 0.8:
                payment_settle(request)
                self.closed(request)
                self.count("settled")
            elif roll < 0.93:
                payment_fail(request, "Conservation failure")
                self.closed(request)
                self.count("failed")
            else:
                payment_review_approve(request)
                self.count("approved")
        except ApiError as error:
            self.count(f"refused {error.code}")

    def worker(self, index: int, operations: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        try:
            for _ in range(operations):
                self.one(rng)
        finally:
            connection.close()


@requires_postgres
def test_five_thousand_racing_operations_conserve_money_to_the_cent(transactional_db):
    program, accounts = _world()
    before = {currency: _customer_total(program, currency) for currency in CURRENCIES}
    seed = int(os.environ.get("CONSERVATION_SEED", random.randrange(1_000_000)))
    run = Run(accounts, seed)
    lowest = [min(account.balance for account in Account.objects.filter(program=program))]
    stop = threading.Event()

    def watch():
        # Read outside the workers' transactions: a negative balance must never be visible.
        try:
            while not stop.is_set():
                seen = Account.objects.filter(program=program).aggregate(low=Min("balance"))["low"]
                lowest[0] = min(lowest[0], seen)
                time.sleep(0.01)
        finally:
            connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        shares = [OPERATIONS // THREADS + (index < OPERATIONS % THREADS) for index in range(THREADS)]
        list(pool.map(lambda index: run.worker(index, shares[index]), range(THREADS)))
    elapsed = time.monotonic() - started
    stop.set()
    watcher.join()

    # Drain what is still open, so all that stays is settled or failed money.
    for request in PaymentRequest.objects.filter(program=program, status=Status.PENDING_TM):
        payment_review_approve(request)
    for request in PaymentRequest.objects.filter(program=program, status=Status.PENDING):
        payment_settle(request)

    report = ledger_check()
    assert report.ok, report
    lines = [
        f"seed {seed}: {sum(run.outcomes.values())} operations from {THREADS} threads on {ACCOUNTS} "
        f"accounts in {elapsed:.1f} s ({sum(run.outcomes.values()) / elapsed:.0f} per second)",
        "outcomes: " + ", ".join(f"{name} {count}" for name, count in sorted(run.outcomes.items())),
    ]
    for currency in CURRENCIES:
        settled = PaymentRequest.objects.filter(program=program, currency=currency, status=Status.SETTLED)
        settled_amount = settled.aggregate(total=Sum("amount"))["total"] or Decimal("0")
        settled_fees = settled.aggregate(total=Sum("fee"))["total"] or Decimal("0")
        after = _customer_total(program, currency)
        postings = LedgerPosting.objects.filter(currency=currency).aggregate(total=Sum("amount"))["total"]
        clearing = _system_total(program, SystemAccount.Kind.CLEARING, currency)
        fees = _system_total(program, SystemAccount.Kind.FEES, currency)
        external = _system_total(program, SystemAccount.Kind.EXTERNAL, currency)

        assert postings == 0
        assert before[currency] - after == settled_amount + settled_fees
        assert clearing == 0
        assert fees == settled_fees
        assert external == -before[currency] + settled_amount  # funding left it, settlements came back
        failed = PaymentRequest.objects.filter(program=program, currency=currency, status=Status.FAILED)
        lines.append(
            f"{currency}: balances {before[currency]} -> {after} (down {before[currency] - after}); "
            f"settled {settled.count()} payments = {settled_amount} + fees {settled_fees}; "
            f"failed {failed.count()}; "
            f"postings sum {postings}; clearing {clearing}; fee account {fees}"
        )
    assert Account.objects.filter(program=program, balance__lt=0).count() == 0
    assert lowest[0] >= 0
    assert run.outcomes["settled"] > 0 and run.outcomes["failed"] > 0
    assert run.outcomes["refused INSUFFICIENT_FUNDS"] > 0, "the run never pressed an account to its limit"
    lines.append(f"lowest balance seen during the run: {lowest[0]}")
    report_figures("conservation (PostgreSQL, 16 threads)", "\n".join(lines))
