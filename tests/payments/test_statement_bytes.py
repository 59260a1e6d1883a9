"""A statement's bytes, and the statement line each customer posting carries.

The routes write a statement from one range read of the postings, the lines'
fixed parts written by the database on PostgreSQL and by Python elsewhere. The
oracle here is independent of both: the postings joined to their movements and
payment requests, rendered by the JSON renderer through the statement's
serializer, and by `csv.writer`.
"""

import csv
import importlib
import io
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
import xmlschema
from django.apps import apps as django_apps
from django.db import connection
from rest_framework.renderers import JSONRenderer

from bankapi.models import Account
from batches.models import BatchItem
from payments.ledger import ledger_check, ledger_fund_account
from payments.models import LedgerPosting, PaymentRequest
from payments.payees import Payee, UkAccount
from payments.selectors import ledger as ledger_selectors
from payments.services.acceptance import PaymentInstruction, payment_accept
from payments.services.returns import payment_return
from payments.services.settlement import payment_fail, payment_settle
from payments.statement_formats import CAMT053_LAYOUT, CAMT053_XSD, CSV_HEADER, CSV_LAYOUT, JSON_LAYOUT
from payments.views.statements import StatementSerializer
from tests.payments.conftest import payments_url
from tests.support.factories import funded_account

# "Today" is read more than once: a run across midnight must read one day.
pytestmark = pytest.mark.usefixtures("clear_of_midnight")

# Text every format must carry through: quotes, a backslash, a comma, line
# breaks, a control character, non-ASCII, the two JavaScript line separators, markup,
# and a spreadsheet formula.
AWKWARD = 'He said "hi", \\o/\r\nthen\tleft \x01 ünïcödé € \u2028\u2029 & <b>done</b>'
FORMULA = "=SUM(A1:A9)"
PAYEE = Payee(name="Jane", account=UkAccount(sort_code="200000", account_number="55779911"))
# Booking moments: a whole second (no fraction), a fraction with trailing
# zeros, and one with all six digits.
MOMENTS = [
    datetime(2026, 3, 1, 9, 0, 0, tzinfo=UTC),
    datetime(2026, 3, 1, 23, 59, 59, 500000, tzinfo=UTC),
    datetime(2026, 3, 2, 0, 0, 0, 123456, tzinfo=UTC),
    datetime(2026, 3, 3, 12, 30, 1, 10, tzinfo=UTC),
]


def _history(customer, returned: bool = True) -> Account:
    """An account whose postings cover every kind of statement line, booked at
    the MOMENTS, their free text as awkward as it gets (a return among them
    unless `returned` is False)."""
    with time_machine.travel(MOMENTS[0], tick=False) as clock:
        account = funded_account(customer, "0.00", iban="GB33BUKB20201555555555")
        ledger_fund_account(account, Decimal("500.00"), key=f"test:{uuid.uuid4()}", memo=AWKWARD)
        clock.move_to(MOMENTS[1])
        ledger_fund_account(account, Decimal("1.00"), key=f"test:{uuid.uuid4()}", memo=FORMULA)
        settled = payment_accept(
            account=account,
            instruction=PaymentInstruction(
                amount=Decimal("20.00"), currency="GBP", reference="Rent, March", payee=PAYEE
            ),
        )
        clock.move_to(MOMENTS[2])
        failed = payment_accept(
            account=Account.objects.get(id=account.id),
            instruction=PaymentInstruction(
                amount=Decimal("3.10"), currency="GBP", reference="-2 apples", payee=PAYEE
            ),
        )
        clock.move_to(MOMENTS[3])
        payment_settle(settled)
        payment_fail(failed, AWKWARD)
        if returned:
            payment_return(settled, "AC04")
    return account


def _end_to_end_id(request: PaymentRequest | None) -> str | None:
    """A batch item's end-to-end id (a file's, or the item id), else the request id, in hex."""
    if request is None:
        return None
    item = BatchItem.objects.filter(payment=request).first()
    if item is not None:
        return item.end_to_end_id or item.id.hex
    return request.id.hex


def _oracle(account: Account, first, last) -> dict:
    """The statement's data from the postings joined to their movements and
    payment requests (not from the facts the postings carry)."""
    start = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(last + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    postings = LedgerPosting.objects.filter(account=account).order_by("created_at", "id")
    before = postings.filter(created_at__lt=start).last()
    entries = []
    for posting in postings.filter(created_at__gte=start, created_at__lt=end).select_related("transaction"):
        movement = posting.transaction
        request = (
            PaymentRequest.objects.filter(acceptance=movement).first()
            or PaymentRequest.objects.filter(reversal=movement).first()
            or PaymentRequest.objects.filter(return_movement=movement).first()
        )
        if movement.kind == "PAYMENT":
            description = "Payment" if request else "Funds reserved for batch payments"
        elif movement.kind == "REVERSAL":
            description = f"Payment failed: {movement.memo}" if request else "Reserved funds released"
        elif movement.kind == "RETURN":
            description = f"Payment returned: {movement.memo}"
        else:
            description = movement.get_kind_display()
        entries.append(
            {
                "entryId": str(posting.id),
                "bookedAt": posting.created_at,
                "amount": abs(posting.amount),
                "creditDebit": "CRDT" if posting.amount > 0 else "DBIT",
                "balanceAfter": posting.balance_after,
                "reference": ((request.reference if request else "") or movement.memo)[:140],
                "requestId": request.id if request else None,
                "endToEndId": _end_to_end_id(request),
                "returnReason": movement.memo if movement.kind == "RETURN" else None,
                "description": description,
            }
        )
    opening = before.balance_after if before else Decimal("0.00")
    return {
        "accountId": account.id,
        "currency": account.currency,
        "from": first,
        "to": last,
        "openingBalance": opening,
        "closingBalance": entries[-1]["balanceAfter"] if entries else opening,
        "entries": entries,
    }


def _csv(data: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    for entry in data["entries"]:
        row = [
            entry["bookedAt"].isoformat(),
            entry["entryId"],
            entry["creditDebit"],
            f"{entry['amount']:.2f}",
            f"{entry['balanceAfter']:.2f}",
            entry["reference"],
            str(entry["requestId"] or ""),
            entry["description"],
            entry["endToEndId"] or "",
        ]
        writer.writerow([f"'{cell}" if cell.startswith(("=", "+", "-", "@")) else cell for cell in row])
    return out.getvalue()


@pytest.mark.parametrize(
    "days",
    [(MOMENTS[0].date(), None), (MOMENTS[1].date(), MOMENTS[2].date()), (MOMENTS[2].date(), None)],
    ids=["everything", "middle", "after-the-first-day"],
)
def test_a_statement_is_byte_for_byte_what_the_renderer_and_csv_writer_write(
    api, customer, customer_auth, days
):
    account = _history(customer)
    first, last = days[0], days[1] or datetime.now(UTC).date()
    expected = _oracle(account, first, last)
    assert expected["entries"], "the period holds entries"
    url = payments_url(account.customer_id, account.id, "statements")

    body = api.get(url, {"from": str(first), "to": str(last)}, **customer_auth)
    text = api.get(url, {"from": str(first), "to": str(last), "format": "csv"}, **customer_auth)

    assert body.status_code == text.status_code == 200
    assert body["Content-Type"] == "application/json"
    rendered = JSONRenderer().render({"success": True, "data": StatementSerializer(expected).data})
    assert body.content == rendered
    assert text.content.decode() == _csv(expected)


def test_awkward_text_stays_text_in_camt053(api, customer, customer_auth):
    account = _history(customer)
    url = payments_url(account.customer_id, account.id, "statements")

    response = api.get(
        url,
        {"from": str(MOMENTS[0].date()), "to": str(datetime.now(UTC).date()), "format": "camt053"},
        **customer_auth,
    )

    assert response.status_code == 200
    document = xmlschema.XMLSchema(str(CAMT053_XSD)).to_dict(response.content)
    entries = document["BkToCstmrStmt"]["Stmt"][0]["Ntry"]
    # XML 1.0 cannot carry U+0001: it reads as U+FFFD; "\r\n" reads as "\n".
    awkward = AWKWARD.replace("\x01", "\ufffd").replace("\r\n", "\n")
    references = [
        entry["NtryDtls"][0]["TxDtls"][0].get("RmtInf", {}).get("Ustrd", [""])[0] for entry in entries
    ]
    assert references == [awkward, FORMULA, "Rent, March", "-2 apples", "-2 apples", "Rent, March"]
    returned = entries[-1]["NtryDtls"][0]["TxDtls"][0]
    assert returned["RtrInf"]["Rsn"]["Cd"] == "AC04"
    assert returned["Refs"]["EndToEndId"] == entries[2]["NtryDtls"][0]["TxDtls"][0]["Refs"]["EndToEndId"]


def test_every_customer_posting_carries_its_movements_statement_line(customer):
    """The writers fill the line (ledger_check, run after every test, holds them
    to it); a line that differs from its movement is reported."""
    account = _history(customer)
    assert ledger_check().ok
    posting = LedgerPosting.objects.filter(account=account, request_id__isnull=False).first()
    LedgerPosting.objects.filter(id=posting.id).update(reference="Something else")

    assert ledger_check().misstated_lines == [posting.id]

    LedgerPosting.objects.filter(id=posting.id).update(reference=posting.reference)
    assert ledger_check().ok


def test_the_migration_fills_statement_lines_from_the_movements(customer):
    # Returns came later than this migration: none in the history it fills.
    account = _history(customer, returned=False)
    columns = ("id", "kind", "request_id", "reference", "description")
    expected = list(LedgerPosting.objects.order_by("id").values_list(*columns))
    LedgerPosting.objects.update(kind="", request_id=None, reference="", description="")
    migration = importlib.import_module("payments.migrations.0007_posting_statement_line")

    migration.statement_lines(django_apps, _SchemaEditor())

    assert list(LedgerPosting.objects.order_by("id").values_list(*columns)) == expected
    assert LedgerPosting.objects.filter(account=account, request_id__isnull=False).count() == 3
    assert ledger_check().ok


class _SchemaEditor:
    """What the migration's function uses of a schema editor."""

    def __init__(self) -> None:
        from django.db import connection

        self.connection = connection


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL writes the lines itself there")
@pytest.mark.parametrize("layout", [JSON_LAYOUT, CSV_LAYOUT, CAMT053_LAYOUT], ids=lambda layout: layout.name)
def test_postgresql_writes_each_line_as_python_does(customer, layout):
    account = _history(customer)
    # From the day after the first two postings: the rest, day by day.
    start = datetime.combine(MOMENTS[2].date(), datetime.min.time(), tzinfo=UTC)
    end = datetime.now(UTC) + timedelta(days=1)

    by_database = list(ledger_selectors._day_lines(account, start, end, layout))
    by_python = list(ledger_selectors.day_lines_written_here(account, start, end, layout))

    assert by_database == by_python
    assert [(day, len(lines)) for day, lines in by_database] == [
        (MOMENTS[2].date(), 1),
        # The failed payment given back, the settled one returned.
        (MOMENTS[3].date(), 2),
    ]
