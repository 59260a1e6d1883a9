"""What the payments bench measures in this process with Django's test client:
the statements a payment sends, the time of one payment in one thread, and the
hot account's balance checked to the cent."""

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from decimal import Decimal

from payments_load import WrkResult
from payments_seed import AMOUNT, Target
from serving import fail


class StatementTrace:
    """Counts the statements a block sends to PostgreSQL: every Query message
    (simple protocol) and every Bind message (extended protocol: one per
    statement executed, whether its text was parsed just before or prepared
    earlier on the connection) in libpq's protocol trace, so BEGIN, COMMIT and
    SAVEPOINT count too, and so do statements sent on a connection opened
    inside the block."""

    def __enter__(self):
        from django.db import connection
        from django.db.backends.signals import connection_created

        self.file = tempfile.TemporaryFile()
        self.traced = []
        connection_created.connect(self._created)
        if connection.connection is not None:
            self._attach(connection.connection)
        return self

    def _created(self, sender, connection, **kwargs) -> None:
        self._attach(connection.connection)

    def _attach(self, raw) -> None:
        raw.pgconn.trace(self.file.fileno())
        self.traced.append(raw)

    def __exit__(self, *exc) -> None:
        from django.db.backends.signals import connection_created

        connection_created.disconnect(self._created)
        for raw in self.traced:
            if not raw.closed:
                raw.pgconn.untrace()

    def statements(self) -> list[str]:
        self.file.seek(0)
        sent = []
        parsed: dict[str, str] = {}
        for row in self.file.read().decode(errors="replace").splitlines():
            fields = row.split("\t")
            if len(fields) < 4 or fields[1] != "F":
                continue
            if fields[3] == "Query":
                sent.append(fields[4].strip())
            elif fields[3] == "Parse":
                # ` "<name>" "<text>" <parameter types>`: remembered for the Bind that runs it.
                name, _, text = fields[4].strip().partition(" ")
                parsed[name] = text.strip('"')
            elif fields[3] == "Bind":
                # ` "<portal>" "<statement>" <values>`
                statement = fields[4].strip().split(" ", 2)[1]
                sent.append(parsed.get(statement, f"(prepared {statement.strip(chr(34))})"))
        return sent


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def in_process_payer(target: Target) -> Callable[[], None]:
    """One payment of AMOUNT from the target's account through Django's test
    client in this thread, a new Idempotency-Key each; any answer but 200 fails
    the bench."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {target.token}")
    body = {"amount": str(AMOUNT), "reference": "Bench", "beneficiaryId": target.beneficiary_id}

    def pay() -> None:
        answer = client.post(
            target.path, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4())
        )
        if answer.status_code != 200:
            fail(f"in-process payment answered {answer.status_code}: {answer.content[:300]!r}")

    return pay


def in_process(target: Target, payments: int) -> tuple[float, list[str]]:
    """Median time of one payment through Django's test client in this thread,
    and the statements of one payment."""
    pay = in_process_payer(target)
    for _ in range(20):
        pay()
    with StatementTrace() as trace:
        pay()
    timings = []
    for _ in range(payments):
        started = time.perf_counter()
        pay()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000, trace.statements()


def check_hot_account(target: Target, result: WrkResult, clients: int, before: Decimal) -> str:
    """The hot account's balance to the cent, against the payments it accepted."""
    from bankapi.models import Account
    from payments.models import PaymentRequest

    time.sleep(1)  # answers wrk stopped waiting for are finished by then
    accepted = PaymentRequest.objects.filter(account_id=target.account_id).count()
    balance = Account.objects.get(id=target.account_id).balance
    answered_ok = result.requests - result.non2xx
    problems = []
    if balance != before - accepted * AMOUNT:
        problems.append(f"balance {balance} != {before} - {accepted} x {AMOUNT}")
    if not answered_ok <= accepted <= answered_ok + clients:
        problems.append(f"{accepted} payments accepted but {answered_ok} answered 2xx")
    if result.non2xx:
        problems.append(f"{result.non2xx} non-2xx answers (first: {result.sample[:300]})")
    if problems:
        print("HOT ACCOUNT CHECK FAILED: " + "; ".join(problems))
        return "FAILED"
    return f"exact (balance {balance} = {before} - {accepted} x {AMOUNT}; non-2xx 0)"


def in_process_report(
    statements: list[str], control: int, single_ms: float, count: int, max_age: object
) -> None:
    print(
        f"statements per payment: {len(statements)} ({len(statements) - control} besides "
        f"transaction control), in-process, CONN_MAX_AGE={max_age}"
    )
    shown = os.environ.get("BENCH_SHOW_STATEMENTS")
    if shown:
        # A number above 1: that many characters of each statement, else 160.
        width = int(shown) if shown.isdigit() and int(shown) > 1 else 160
        for sql in statements:
            print(f"    {sql[:width]}")
    print(f"one payment in-process, one thread: {single_ms:.1f} ms (median of {count})")
    print(f"load average now {os.getloadavg()[0]:.1f}")
