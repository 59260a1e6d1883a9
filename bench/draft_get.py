"""Benchmark: the GET of a verified 10,000-payment batch draft.

    .venv/bin/python bench/draft_get.py [--payments 10000] [--runs 7]

Builds a throwaway test database from the configured one (SQLite by default; set
DATABASE_URL for PostgreSQL), makes a custodian with a few client accounts, and
through the API (in-process test client, the custodian's access token) POSTs a
verify of `--payments` payments (one in ten invalid, some to IBAN payees, some
references not ASCII), verified in this process. Then, medians of `--runs`:

- `GET`: GET /v1/batch-payments/{id} of that draft, wall time and the CPU of this
  process (the database's own work is not in the CPU figure);
- `ceiling`: `json.loads` of the draft's two stored result columns, as the
  database returns them, and the response body written from them by the API's
  JSON renderer. What a GET costs in Python at least, whatever it does: the
  stored results must be read and the answer written. Before the results were
  stored in the domain's names, the GET did little more than this;
- `dataclass path`: the same columns read into `CheckedPayment`s, each put in
  the API's names (`sent_payment_to_wire`) and the body written: how the GET
  built its body before it rendered the stored form directly;
- `presenter`: the same columns through `draft_detail` (what the GET runs) and
  the body written.

Each figure is also printed as a ratio to `ceiling` measured in the same run, so
that figures from a loaded, shared machine can be compared. The test database is
dropped afterwards.
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A throwaway test database and development secrets, even when DATABASE_URL is set.
os.environ.setdefault("BANKAPI_ENV", "development")

import django  # noqa: E402

django.setup()

from batches_seed import seed  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from rest_framework.renderers import JSONRenderer  # noqa: E402
from scratch import scratch_database  # noqa: E402

from authn.tokens import tokens_issue  # noqa: E402
from batches.models import Draft  # noqa: E402
from batches.presenters import draft_detail  # noqa: E402
from batches.rules import sent_payment_to_wire  # noqa: E402
from config.celery import app  # noqa: E402

URL = "/v1/batch-payments"
PAYEE_UK = {
    "name": "Bench Payee",
    "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
}
PAYEE_IBAN = {
    "name": "Zoë Müller GmbH",
    "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
    "accountType": "BUSINESS",
}
PAYEE_BAD = {"name": "Bad Payee", "account": {"type": "uk", "sortCode": "12", "accountNumber": "1"}}


def payments(accounts: list[dict], count: int) -> list[dict]:
    """One in ten invalid (a bad payee account), one in eight to an IBAN payee,
    one in three with a reference that is not ASCII."""
    sent = []
    for n in range(count):
        payee = PAYEE_BAD if n % 10 == 9 else PAYEE_IBAN if n % 8 == 1 else PAYEE_UK
        sent.append(
            {
                "payer": {"account": {"type": "uk", **accounts[n % len(accounts)]}},
                "payee": payee,
                "reference": f"Facture n° {n} – été" if n % 3 == 0 else f"Invoice {n}",
                "amount": f"{1 + n % 500}.{n % 100:02d}",
            }
        )
    return sent


def median_ms(run: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time of this process, in milliseconds,
    after one run to warm up. Each run starts after a full garbage collection
    (not timed): otherwise whether one of the collections its allocations set
    off is a full one, over every object of the process, decides much of the
    figure, and runs of the same code differ by half."""
    run()
    walls, cpus = [], []
    for _ in range(runs):
        gc.collect()
        started, cpu_started = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def stored_texts(draft_id: str) -> tuple[str, str]:
    """The two result columns as the database returns them, before any JSON decoding."""
    sql, params = (
        Draft.objects.filter(id=draft_id)
        .values_list("valid_payments", "invalid_payments")
        .query.sql_with_params()
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--payers", type=int, default=10)
    args = parser.parse_args()

    app.conf.task_always_eager = True
    with scratch_database():
        user, payers = seed(args.payers)
        accounts = [{"sortCode": a.sort_code, "accountNumber": a.account_number} for a in payers]
        client = Client(HTTP_AUTHORIZATION=f"Bearer {tokens_issue(user).access_token}")
        answer = client.post(
            URL,
            json.dumps({"action": "verify", "payments": payments(accounts, args.payments)}).encode(),
            content_type="application/json",
        )
        assert answer.status_code == 200, answer.content[:500]
        draft_id = answer.json()["requestId"]
        draft = Draft.objects.get(id=draft_id)
        assert draft.verified_at is not None, "the draft was not verified in this process"
        print(
            f"Draft of {args.payments} payments ({len(draft.valid_payments)} valid, "
            f"{len(draft.invalid_payments)} invalid) on {connection.vendor}; "
            f"load average {os.getloadavg()[0]:.1f}"
        )

        def get() -> bytes:
            response = client.get(f"{URL}/{draft_id}")
            assert response.status_code == 200, response.content[:500]
            return response.content

        body = get()
        valid_text, invalid_text = stored_texts(draft_id)
        renderer = JSONRenderer()

        shown = draft_detail(draft)

        def envelope(valid: list, invalid: list) -> bytes:
            """The GET's body with these results in it."""
            data = {**shown, "draft": {**shown["draft"], "validPayments": valid, "invalidPayments": invalid}}
            return renderer.render({"success": True, "data": data})

        def ceiling() -> bytes:
            return envelope(json.loads(valid_text), json.loads(invalid_text))

        def dataclass_path() -> bytes:
            draft.valid_payments, draft.invalid_payments = json.loads(valid_text), json.loads(invalid_text)
            valid, invalid = draft.checked_payments()
            return envelope(
                [_dataclass_entry(checked) for checked in valid],
                [_dataclass_entry(checked) for checked in invalid],
            )

        def presenter() -> bytes:
            draft.valid_payments, draft.invalid_payments = json.loads(valid_text), json.loads(invalid_text)
            return renderer.render({"success": True, "data": draft_detail(draft)})

        assert dataclass_path() == presenter() == body, "the presenter's body is not the GET's"
        ceiling_ms, ceiling_cpu = median_ms(ceiling, args.runs)
        print(
            f"ceiling (json.loads of the stored results + the body written): "
            f"{ceiling_ms:.1f} ms wall, CPU {ceiling_cpu:.1f} ms"
        )
        for name, run in (("dataclass path", dataclass_path), ("presenter", presenter), ("GET", get)):
            wall, cpu = median_ms(run, args.runs)
            print(
                f"{name}: {wall:.1f} ms wall ({wall / ceiling_ms:.2f}x ceiling), "
                f"CPU {cpu:.1f} ms ({cpu / ceiling_cpu:.2f}x ceiling)"
            )


def _dataclass_entry(checked) -> dict:
    entry = {"index": checked.index, "payment": sent_payment_to_wire(checked.payment)}
    if not checked.valid:
        entry["reasons"] = list(checked.reasons)
    return entry


if __name__ == "__main__":
    main()
