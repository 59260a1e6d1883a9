"""Statements of an account (json, camt.053, csv) and its balance at any moment:
every figure reconciles with the ledger, to the cent."""

import csv
import importlib
import io
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from xml.etree import ElementTree

import pytest
import time_machine
import xmlschema
from django.apps import apps as django_apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bankapi.models import Account, Customer
from batches.services.processing import batch_process
from payments.ledger import ledger_check, ledger_fund_account
from payments.models import LedgerPosting, PaymentRequest
from payments.selectors.ledger import balance_as_of
from payments.services.settlement import payment_fail, payment_settle
from payments.statement_formats import CAMT053_NAMESPACE, CAMT053_XSD, CSV_HEADER
from tests.batches.conftest import payment
from tests.batches.helpers import batch_submitted
from tests.payments.conftest import payments_url
from tests.support.auth import access_header
from tests.support.factories import custodian_with_clients, funded_account

# "Today" is read more than once: a run across midnight must read one day.
pytestmark = pytest.mark.usefixtures("clear_of_midnight")

NS = {"c": CAMT053_NAMESPACE}
MICROSECOND = timedelta(microseconds=1)


@pytest.fixture(scope="module")
def camt053_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(CAMT053_XSD))


def statement(api, auth, account, first, last, fmt=None, **params):
    query = {"from": str(first), "to": str(last), **params}
    if fmt:
        query["format"] = fmt
    return api.get(payments_url(account.customer_id, account.id, "statements"), query, **auth)


def pay(api, auth, account, amount, reference="Invoice"):
    response = api.post(
        payments_url(account.customer_id, account.id),
        {
            "amount": amount,
            "reference": reference,
            "payee": {
                "name": "Jane",
                "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
            },
        },
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )
    return response


def request_of(response) -> PaymentRequest:
    return PaymentRequest.objects.get(id=response.json()["data"]["bankTransfer"]["requestId"])


def posted_before(account, moment) -> Decimal:
    """The balance from the raw postings, without balance_after: the oracle."""
    # Summed here in Decimal: exact on every database.
    amounts = LedgerPosting.objects.filter(account=account, created_at__lt=moment).values_list(
        "amount", flat=True
    )
    total = sum(amounts, Decimal("0.00"))
    return total


def customer_token(payer) -> dict:
    """The customer's access token issued now: under a travelled clock, one issued
    at the real time would not be valid yet."""
    return access_header(payer.email, payer.program_id)


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def camt_entries(document: bytes) -> tuple[ElementTree.Element, list[dict]]:
    root = ElementTree.fromstring(document)
    stmt = root.find("c:BkToCstmrStmt/c:Stmt", NS)
    entries = [
        {
            "entryId": ntry.findtext("c:AcctSvcrRef", namespaces=NS),
            "amount": ntry.findtext("c:Amt", namespaces=NS),
            "currency": ntry.find("c:Amt", NS).get("Ccy"),
            "creditDebit": ntry.findtext("c:CdtDbtInd", namespaces=NS),
            "bookedAt": ntry.findtext("c:BookgDt/c:DtTm", namespaces=NS),
            "valueDate": ntry.findtext("c:ValDt/c:Dt", namespaces=NS),
            "endToEnd": ntry.findtext("c:NtryDtls/c:TxDtls/c:Refs/c:EndToEndId", namespaces=NS),
            "reference": ntry.findtext("c:NtryDtls/c:TxDtls/c:RmtInf/c:Ustrd", namespaces=NS) or "",
        }
        for ntry in stmt.findall("c:Ntry", NS)
    ]
    return stmt, entries


def test_a_statement_reconciles_with_the_ledger_and_its_three_formats_agree(
    api, customer, customer_auth, camt053_schema
):
    account = funded_account(customer, "500.00", iban="GB33BUKB20201555555555")
    settled = pay(api, customer_auth, account, "120.00", reference="Rent, March")
    failed = pay(api, customer_auth, account, "30.50", reference='Say "hi"')
    pay(api, customer_auth, account, "9.99", reference="Pending")
    payment_settle(request_of(settled))
    payment_fail(request_of(failed), "Beneficiary account closed")
    today = datetime.now(UTC).date()

    as_json = statement(api, customer_auth, account, today, today)
    as_csv = statement(api, customer_auth, account, today, today, "csv")
    as_xml = statement(api, customer_auth, account, today, today, "camt053")

    assert as_json.status_code == as_csv.status_code == as_xml.status_code == 200
    data = as_json.json()["data"]
    assert (data["accountId"], data["currency"], data["from"], data["to"]) == (
        str(account.id),
        "GBP",
        str(today),
        str(today),
    )
    entries = data["entries"]
    # Funding, three acceptances, the failed one given back; settlement moves no customer money.
    assert [(e["creditDebit"], e["amount"]) for e in entries] == [
        ("CRDT", "500.00"),
        ("DBIT", "120.00"),
        ("DBIT", "30.50"),
        ("DBIT", "9.99"),
        ("CRDT", "30.50"),
    ]
    assert entries[4]["requestId"] == str(request_of(failed).id)
    assert entries[2]["requestId"] == str(request_of(failed).id)
    assert entries[4]["description"] == "Payment failed: Beneficiary account closed"
    assert entries[0]["requestId"] is None
    # Payments made one by one are matched by their request id, as 32 hex digits.
    assert entries[0]["endToEndId"] is None and entries[0]["returnReason"] is None
    assert entries[4]["endToEndId"] == entries[2]["endToEndId"] == request_of(failed).id.hex
    running = Decimal(data["openingBalance"])
    for entry in entries:
        running += Decimal(entry["amount"]) * (1 if entry["creditDebit"] == "CRDT" else -1)
        assert Decimal(entry["balanceAfter"]) == running
    assert data["openingBalance"] == "0.00"
    assert Decimal(data["closingBalance"]) == running == Account.objects.get(id=account.id).balance
    assert running == Decimal("370.01")

    # CSV: the same entries, row by row.
    assert as_csv["Content-Type"] == "text/csv; charset=utf-8"
    assert as_csv["Content-Disposition"].startswith("attachment;")
    assert as_csv["X-Content-Type-Options"] == "nosniff"
    text = as_csv.content.decode()
    assert text.startswith(",".join(CSV_HEADER) + "\r\n")
    rows = csv_rows(text)
    assert [{key: row[key] for key in CSV_HEADER} for row in rows] == [
        {
            "bookedAt": e["bookedAt"],
            "entryId": e["entryId"],
            "creditDebit": e["creditDebit"],
            "amount": e["amount"],
            "balanceAfter": e["balanceAfter"],
            "reference": e["reference"],
            "requestId": e["requestId"] or "",
            "description": e["description"],
            "endToEndId": e["endToEndId"] or "",
        }
        for e in entries
    ]
    assert rows[1]["reference"] == "Rent, March" and rows[2]["reference"] == 'Say "hi"'

    # camt.053: valid against the official schema, the same entries and balances.
    assert as_xml["Content-Type"] == "application/xml; charset=utf-8"
    assert as_xml["Content-Disposition"].startswith("attachment;")
    assert as_xml["X-Content-Type-Options"] == "nosniff"
    camt053_schema.validate(as_xml.content)
    stmt, camt = camt_entries(as_xml.content)
    assert stmt.findtext("c:Acct/c:Id/c:IBAN", namespaces=NS) == "GB33BUKB20201555555555"
    assert stmt.findtext("c:FrToDt/c:FrDtTm", namespaces=NS) == f"{today}T00:00:00Z"
    assert stmt.findtext("c:FrToDt/c:ToDtTm", namespaces=NS) == f"{today}T23:59:59Z"
    balances = {
        bal.findtext("c:Tp/c:CdOrPrtry/c:Cd", namespaces=NS): bal.findtext("c:Amt", namespaces=NS)
        for bal in stmt.findall("c:Bal", NS)
    }
    # Nothing is held: the closing available balance is the closing balance.
    assert balances == {
        "OPBD": data["openingBalance"],
        "CLBD": data["closingBalance"],
        "CLAV": data["closingBalance"],
    }
    assert camt == [
        {
            "entryId": e["entryId"],
            "amount": e["amount"],
            "currency": "GBP",
            "creditDebit": e["creditDebit"],
            "bookedAt": e["bookedAt"],
            "valueDate": str(today),
            "endToEnd": e["endToEndId"] or "NOTPROVIDED",
            "reference": e["reference"],
        }
        for e in entries
    ]


def test_an_account_without_iban_is_named_by_sort_code_and_number(
    api, customer, customer_auth, camt053_schema
):
    account = funded_account(customer, "5.00", sort_code="200000", account_number="12345678")
    today = datetime.now(UTC).date()

    response = statement(api, customer_auth, account, today, today, "camt053")

    camt053_schema.validate(response.content)
    stmt, _ = camt_entries(response.content)
    assert stmt.findtext("c:Acct/c:Id/c:Othr/c:Id", namespaces=NS) == "20000012345678"
    assert stmt.findtext("c:Acct/c:Id/c:Othr/c:SchmeNm/c:Cd", namespaces=NS) == "BBAN"


@pytest.mark.parametrize("reference", ['=HYPERLINK("http://x")', "+1+1", "-2", "@SUM(A1)"])
def test_csv_cells_a_spreadsheet_would_run_are_defused(api, customer, customer_auth, reference):
    account = funded_account(customer, "50.00")
    assert pay(api, customer_auth, account, "1.00", reference=reference).status_code == 200
    today = datetime.now(UTC).date()

    rows = csv_rows(statement(api, customer_auth, account, today, today, "csv").content.decode())

    assert rows[1]["reference"] == "'" + reference
    # The JSON keeps the reference as sent.
    entries = statement(api, customer_auth, account, today, today).json()["data"]["entries"]
    assert entries[1]["reference"] == reference


def test_a_period_crossing_midnight_splits_at_00_00_utc(api, customer, payer):
    with time_machine.travel(datetime(2026, 3, 9, 23, 59, 59, tzinfo=UTC), tick=False) as clock:
        account = funded_account(customer, "100.00")
        clock.move_to(datetime(2026, 3, 10, 0, 0, 0, tzinfo=UTC))
        ledger_fund_account(account, Decimal("0.01"), key=f"test:{uuid.uuid4()}", memo="Midnight")
        clock.move_to(datetime(2026, 3, 10, 18, 0, tzinfo=UTC))
        customer_auth = customer_token(payer)

        first = statement(api, customer_auth, account, "2026-03-09", "2026-03-09").json()["data"]
        second = statement(api, customer_auth, account, "2026-03-10", "2026-03-10").json()["data"]
        both = statement(api, customer_auth, account, "2026-03-09", "2026-03-10").json()["data"]
        before = statement(api, customer_auth, account, "2026-03-01", "2026-03-08").json()["data"]

    assert [e["amount"] for e in first["entries"]] == ["100.00"]
    assert (first["openingBalance"], first["closingBalance"]) == ("0.00", "100.00")
    assert [(e["amount"], e["reference"]) for e in second["entries"]] == [("0.01", "Midnight")]
    assert second["entries"][0]["bookedAt"] == "2026-03-10T00:00:00+00:00"
    assert (second["openingBalance"], second["closingBalance"]) == ("100.00", "100.01")
    assert both["entries"] == first["entries"] + second["entries"]
    assert (before["openingBalance"], before["closingBalance"], before["entries"]) == ("0.00", "0.00", [])


def test_the_balance_between_two_postings_is_the_first_ones(api, customer, payer):
    with time_machine.travel(datetime(2026, 4, 1, 9, 0, tzinfo=UTC), tick=False) as clock:
        account = funded_account(customer, "10.00")
        clock.move_to(datetime(2026, 4, 1, 11, 0, tzinfo=UTC))
        ledger_fund_account(account, Decimal("5.00"), key=f"test:{uuid.uuid4()}")
        clock.move_to(datetime(2026, 4, 2, 8, 0, tzinfo=UTC))
        customer_auth = customer_token(payer)
        url = payments_url(account.customer_id, account.id, "balances")

        def at(moment: str) -> dict:
            response = api.get(url, {"asOf": moment}, **customer_auth)
            assert response.status_code == 200, response.json()
            return response.json()["data"]

        assert at("2026-04-01T10:00:00Z") == {
            "accountId": str(account.id),
            "currency": "GBP",
            "asOf": "2026-04-01T10:00:00+00:00",
            "balance": "10.00",
            "available": "10.00",
        }
        # At the instant of a posting, it counts; an offset is read as such.
        assert at("2026-04-01T11:00:00Z")["balance"] == "15.00"
        assert at("2026-04-01T12:59:59.999999+02:00")["balance"] == "10.00"
        assert at("2026-04-01T08:59:59Z")["balance"] == "0.00"
        # No offset: UTC.
        assert at("2026-04-01T09:00:00")["balance"] == "10.00"
        now = api.get(url, **customer_auth).json()["data"]
        assert (now["balance"], now["asOf"]) == ("15.00", "2026-04-02T08:00:00+00:00")
        future = api.get(url, {"asOf": "2026-04-02T08:00:00.000001Z"}, **customer_auth)

    assert (future.status_code, future.json()["errors"][0]["field"]) == (400, "asOf")


@pytest.mark.parametrize(
    "params, field",
    [
        ({"from": "2026-02-30", "to": "2026-03-01"}, "from"),
        ({"from": "2026-3-01", "to": "2026-03-01"}, "from"),
        ({"from": "2026-03-01 ", "to": "2026-03-01"}, "from"),
        ({"from": "2026-03-01"}, "to"),
        ({"from": "2026-03-02", "to": "2026-03-01"}, "from"),
        ({"from": "2026-03-01", "to": "2026-03-11"}, "to"),
        ({"from": "2025-03-09", "to": "2026-03-10"}, "from"),
        ({"from": "2026-03-01", "to": "2026-03-01", "format": "pdf"}, "format"),
        ({"from": "2026-03-01", "to": "2026-03-01", "format": "JSON"}, "format"),
    ],
)
def test_a_statement_outside_the_rules_is_400(api, customer, params, field, payer):
    account = funded_account(customer, "1.00")
    with time_machine.travel(datetime(2026, 3, 10, 12, tzinfo=UTC), tick=False):
        url = payments_url(account.customer_id, account.id, "statements")
        response = api.get(url, params, **customer_token(payer))

    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert [error["field"] for error in response.json()["errors"]] == [field]


def test_a_statement_may_cover_366_days_up_to_today(api, customer, payer):
    account = funded_account(customer, "1.00")
    with time_machine.travel(datetime(2026, 3, 10, 12, tzinfo=UTC), tick=False):
        response = statement(api, customer_token(payer), account, "2025-03-10", "2026-03-10")

    assert response.status_code == 200


@pytest.mark.parametrize(
    "asof", ["yesterday", "2026-04-01", "2026-04-31T00:00:00Z", "0001-01-01T00:00:00+01:00"]
)
def test_a_balance_at_no_real_moment_is_400(api, customer_auth, asof, account, customer):
    url = payments_url(str(customer.id), str(account.id), "balances")

    response = api.get(url, {"asOf": asof}, **customer_auth)

    assert (response.status_code, response.json()["errors"][0]["field"]) == (400, "asOf")


@pytest.mark.parametrize("what", ["statements", "balances", "limits"])
def test_another_customers_account_is_not_found(api, customer2_auth, what, account, customer):
    url = payments_url(str(customer.id), str(account.id), what)

    response = api.get(url, {"from": "2026-01-01", "to": "2026-01-01"}, **customer2_auth)

    assert (response.status_code, response.json()["code"]) == (404, "RESOURCE_NOT_FOUND")
    assert str(account.id) not in response.content.decode()


@pytest.mark.parametrize("what", ["statements", "balances", "limits"])
def test_an_id_token_is_refused(api, customer_id_auth, what, account, customer):
    url = payments_url(str(customer.id), str(account.id), what)

    assert api.get(url, {"from": "2026-01-01", "to": "2026-01-01"}, **customer_id_auth).status_code == 401


def test_a_custodian_reads_its_clients_statement(api, program):
    custodian = custodian_with_clients(program, clients=1)
    account = custodian.accounts[0]
    today = datetime.now(UTC).date()

    response = api.get(
        payments_url(account.customer_id, account.id, "statements"),
        {"from": today, "to": today},
        **custodian.person.access,
    )

    assert response.status_code == 200
    assert response.json()["data"]["closingBalance"] == f"{Account.objects.get(id=account.id).balance:.2f}"


def test_format_is_a_statement_parameter_not_a_renderer_switch(api, customer_auth, account, customer):
    url = payments_url(str(customer.id), str(account.id), "transactions")

    response = api.get(url, {"format": "csv"}, **customer_auth)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_check_ledger_finds_a_running_balance_that_does_not_follow(customer):
    account = funded_account(customer, "10.00")
    ledger_fund_account(account, Decimal("2.00"), key=f"test:{uuid.uuid4()}")
    assert ledger_check().ok
    last = LedgerPosting.objects.filter(account=account).order_by("-created_at", "-id").first()
    LedgerPosting.objects.filter(id=last.id).update(balance_after=Decimal("11.00"))

    report = ledger_check()
    with pytest.raises(CommandError):
        call_command("check_ledger", stdout=io.StringIO(), stderr=io.StringIO())

    assert report.broken_running_balances == {str(account.id): last.id}
    LedgerPosting.objects.filter(id=last.id).update(balance_after=Decimal("12.00"))
    assert ledger_check().ok


def test_the_migration_fills_running_balances_in_booking_order(customer):
    account = funded_account(customer, "10.00")
    for amount in ("2.50", "0.01", "7.00"):
        ledger_fund_account(account, Decimal(amount), key=f"test:{uuid.uuid4()}")
    expected = list(
        LedgerPosting.objects.filter(account=account)
        .order_by("created_at", "id")
        .values_list("balance_after", flat=True)
    )
    LedgerPosting.objects.filter(account__isnull=False).update(balance_after=None)
    migration = importlib.import_module("payments.migrations.0003_posting_balance_after")

    migration.running_balances(django_apps, None)

    got = list(
        LedgerPosting.objects.filter(account=account)
        .order_by("created_at", "id")
        .values_list("balance_after", flat=True)
    )
    assert got == expected == [Decimal("10.00"), Decimal("12.50"), Decimal("12.51"), Decimal("19.51")]
    assert ledger_check().ok


def test_the_balance_selector_agrees_with_the_raw_postings(customer):
    with time_machine.travel(datetime(2026, 5, 1, 12, tzinfo=UTC), tick=True):
        account = funded_account(customer, "3.00")
        ledger_fund_account(account, Decimal("4.00"), key=f"test:{uuid.uuid4()}")
        now = datetime.now(UTC)

    for posting in LedgerPosting.objects.filter(account=account):
        assert balance_as_of(account, posting.created_at) == posted_before(
            account, posting.created_at + MICROSECOND
        )
        assert balance_as_of(account, posting.created_at - MICROSECOND) == posted_before(
            account, posting.created_at
        )
    assert balance_as_of(account, now) == Decimal("7.00")
    assert balance_as_of(account, datetime(2026, 5, 1, tzinfo=UTC)) == Decimal("0.00")
    assert date(2026, 5, 1) == now.date()


def test_a_host_whose_clock_is_behind_books_after_the_accounts_latest_posting(api, customer, program):
    """Two hosts post to one account; the second's clock is an hour behind. Its
    postings (single and bulk) are booked at the account's latest booking time,
    never before it, so the statement's running balance still follows time."""
    ahead = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
    custodian_user = custodian_with_clients(program, clients=0).user
    client = Customer.objects.create(
        program_id=customer.program_id, name="Client", custodian_id=custodian_user.custodian_id
    )
    with time_machine.travel(ahead, tick=False):
        account = funded_account(client, "100.00", sort_code="300008", account_number="00000042")
    with time_machine.travel(ahead - timedelta(hours=1), tick=False):
        ledger_fund_account(account, Decimal("1.00"), key=f"test:{uuid.uuid4()}")
        batch_process(str(batch_submitted(custodian_user, [payment(account, "2.00")]).id))

    postings = list(LedgerPosting.objects.filter(account=account).order_by("id"))
    assert [p.created_at for p in postings] == [ahead] * len(postings)
    assert (
        [p.balance_after for p in postings][-1]
        == Account.objects.get(id=account.id).balance
        == Decimal("99.00")
    )
    assert Account.objects.get(id=account.id).last_booked_at == ahead
    assert ledger_check().ok


@pytest.mark.parametrize("fmt", ["json", "csv", "camt053"])
def test_each_format_reads_the_ledger_once_for_the_days_not_stored(api, customer, customer_auth, fmt):
    account = funded_account(customer, "20.00")
    failed = pay(api, customer_auth, account, "3.00")
    payment_fail(request_of(failed), "Returned")
    today = datetime.now(UTC).date()

    def ledger_reads(first, last) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            response = statement(api, customer_auth, account, first, last, fmt)
        assert response.status_code == 200
        return [q["sql"] for q in queries if "ledgerposting" in q["sql"].lower()]

    # The two balances (one query), then the 31 days in one range read.
    assert len(ledger_reads(today - timedelta(days=30), today)) == 2
    # The 30 closed days are stored now: only the balances are read.
    assert len(ledger_reads(today - timedelta(days=30), today - timedelta(days=1))) == 1


def test_a_reference_with_markup_characters_stays_text_in_camt053(
    api, customer, customer_auth, camt053_schema
):
    account = funded_account(customer, "9.00")
    reference = "Tom & Jerry <Ltd> 'Q1'"
    assert pay(api, customer_auth, account, "1.00", reference=reference).status_code == 200
    today = datetime.now(UTC).date()

    response = statement(api, customer_auth, account, today, today, "camt053")

    camt053_schema.validate(response.content)
    _, entries = camt_entries(response.content)
    assert [entry["reference"] for entry in entries] == ["Funding", reference]
