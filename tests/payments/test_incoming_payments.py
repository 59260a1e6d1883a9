"""Money in: a sandbox credit transfer from another bank, seen on the balance,
the transactions list, statements (camt.053 included), limits and events."""

import uuid
from decimal import Decimal

import pytest
import xmlschema

from bankapi.models import Account
from events.models import Event
from payments.ledger import ledger_check
from payments.models import IncomingPayment, StatementEntry
from payments.statement_formats import CAMT053_XSD
from tests.support.factories import ProgramFactory, custodian_with_clients, customer_user, funded_account

URL = "/v1/sandbox/incoming-payments"
IBAN = "GB33BUKB20201555555555"
DEBTOR_IBAN = "DE89370400440532013000"


@pytest.fixture
def iban_account(customer) -> Account:
    return funded_account(customer, "100.00", iban=IBAN)


def body(**fields) -> dict:
    return {"creditorIban": IBAN, "amount": "250.75", "currency": "GBP", "debtorName": "Acme Ltd", **fields}


def post(api, management, program, data, key=None):
    headers = dict(management.id)
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return api.post(f"{URL}?programId={program.id}", data, format="json", **headers)


def account_url(account: Account, what: str) -> str:
    return f"/v1/customers/{account.customer_id}/accounts/{account.id}/{what}"


def test_a_credit_transfer_is_one_booking_seen_everywhere(
    api, management, program, iban_account, customer_auth
):
    # given an account with 100.00 and its limits before
    limits_before = api.get(account_url(iban_account, "limits"), **customer_auth).json()["data"]
    # when another bank sends 250.75 with remittance information and an end-to-end id
    answer = post(
        api,
        management,
        program,
        body(
            creditorIban="gb33 bukb 2020 1555 5555 55",
            debtorIban=DEBTOR_IBAN,
            endToEndId="INV-2026/42",
            remittanceInformation="Invoice 42",
        ),
    )
    # then it answers the incoming payment
    assert answer.status_code == 200, answer.content
    data = answer.json()["data"]
    assert data["accountId"] == str(iban_account.id)
    assert data["customerId"] == str(iban_account.customer_id)
    assert (data["amount"], data["currency"], data["debtorName"]) == ("250.75", "GBP", "Acme Ltd")
    assert (data["debtorIban"], data["endToEndId"], data["remittanceInformation"]) == (
        DEBTOR_IBAN,
        "INV-2026/42",
        "Invoice 42",
    )
    assert data["receivedAt"].endswith("Z")
    # balance and available rose at once; the daily limit is untouched
    balances = api.get(account_url(iban_account, "balances"), **customer_auth).json()["data"]
    assert (balances["balance"], balances["available"]) == ("350.75", "350.75")
    assert api.get(account_url(iban_account, "limits"), **customer_auth).json()["data"] == limits_before
    # a CREDIT transaction names it
    transactions = api.get(account_url(iban_account, "transactions"), **customer_auth).json()["data"]
    credit = transactions["transactions"][0]
    assert credit["direction"] == "CREDIT" and credit["amount"] == "250.75"
    assert credit["reference"] == "Invoice 42"
    assert credit["incomingPaymentId"] == data["incomingPaymentId"]
    assert (
        credit["cardAuthorizationId"] is None and transactions["transactions"][1]["incomingPaymentId"] is None
    )
    # the statement shows a CRDT with its end-to-end id
    today = data["receivedAt"][:10]
    statement = api.get(
        account_url(iban_account, f"statements?from={today}&to={today}"), **customer_auth
    ).json()["data"]
    entry = statement["entries"][-1]
    assert (entry["creditDebit"], entry["amount"], entry["endToEndId"], entry["reference"]) == (
        "CRDT",
        "250.75",
        "INV-2026/42",
        "Invoice 42",
    )
    assert entry["description"] == "Incoming payment" and entry["requestId"] is None
    # the list and the detail show it, and the event was sent
    listed = api.get(account_url(iban_account, "incoming-payments"), **customer_auth).json()["data"]
    assert listed["incomingPayments"] == [data] and listed["nextToken"] is None
    detail = api.get(
        account_url(iban_account, f"incoming-payments/{data['incomingPaymentId']}"), **customer_auth
    )
    assert detail.json()["data"] == data
    event = Event.objects.get(type="incoming_payment.received")
    assert event.data == data and event.customer_id == iban_account.customer_id
    events = api.get("/v1/events?type=incoming_payment.received", **customer_auth).json()["data"]["events"]
    assert [e["data"] for e in events] == [data]
    assert ledger_check().ok


def test_camt053_names_the_debtor_and_validates(api, management, program, iban_account, customer_auth):
    post(api, management, program, body(debtorIban=DEBTOR_IBAN, endToEndId="E2E-1"))
    post(api, management, program, body(debtorName="No Remittance & Co <x>"))
    today = IncomingPayment.objects.first().received_at.date().isoformat()
    document = api.get(
        account_url(iban_account, f"statements?from={today}&to={today}&format=camt053"), **customer_auth
    ).content
    xmlschema.XMLSchema(str(CAMT053_XSD)).validate(document.decode())
    text = document.decode()
    assert (
        "<RltdPties><Dbtr><Pty><Nm>Acme Ltd</Nm></Pty></Dbtr><DbtrAcct><Id><IBAN>"
        f"{DEBTOR_IBAN}</IBAN></Id></DbtrAcct></RltdPties><RmtInf><Ustrd>Acme Ltd</Ustrd></RmtInf>"
    ) in text
    assert "<EndToEndId>E2E-1</EndToEndId>" in text
    # no remittance information: the debtor name is the Ustrd; no IBAN: no DbtrAcct; no id: NOTPROVIDED
    assert (
        "<EndToEndId>NOTPROVIDED</EndToEndId></Refs><RltdPties><Dbtr><Pty>"
        "<Nm>No Remittance &amp; Co &lt;x&gt;</Nm></Pty></Dbtr></RltdPties>"
        "<RmtInf><Ustrd>No Remittance &amp; Co &lt;x&gt;</Ustrd></RmtInf>"
    ) in text
    csv = api.get(
        account_url(iban_account, f"statements?from={today}&to={today}&format=csv"), **customer_auth
    ).content.decode()
    assert csv.splitlines()[-1].endswith(",Incoming payment,NOTPROVIDED")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"creditorIban": "GB94BARC10201530093459"}, "creditorIban"),
        ({"creditorIban": "not an iban"}, "creditorIban"),
        ({"currency": "EUR"}, "currency"),
        ({"currency": "XYZ"}, "currency"),
        ({"amount": "0"}, "amount"),
        ({"amount": "1.001"}, "amount"),
        ({"amount": 5}, "amount"),
        ({"debtorName": ""}, "debtorName"),
        ({"debtorName": "x" * 141}, "debtorName"),
        ({"debtorName": "Line\nbreak"}, "debtorName"),
        ({"remittanceInformation": "x" * 141}, "remittanceInformation"),
        ({"debtorIban": "DE89370400440532013001"}, "debtorIban"),
        ({"endToEndId": "/starts-with-slash"}, "endToEndId"),
        ({"endToEndId": "a//b"}, "endToEndId"),
        ({"endToEndId": "x" * 36}, "endToEndId"),
        ({"endToEndId": "no@sign"}, "endToEndId"),
        ({"unknown": "field"}, "unknown"),
    ],
)
def test_bad_input_is_400_naming_the_field_and_changes_nothing(
    api, management, program, iban_account, snapshot, change, field
):
    before = snapshot()
    answer = post(api, management, program, body(**change))
    assert answer.status_code == 400, answer.content
    assert answer.json()["code"] == "VALIDATION_ERROR"
    assert field in [error["field"] for error in answer.json()["errors"]]
    assert before.unchanged() and not IncomingPayment.objects.exists()


def test_another_programs_account_is_not_credited(api, management, iban_account, snapshot):
    other = ProgramFactory()
    before = snapshot()
    answer = post(api, management, other, body())
    assert answer.status_code == 400 and answer.json()["errors"][0]["field"] == "creditorIban"
    assert before.unchanged()


def test_a_credit_past_what_the_ledger_holds_is_422(api, management, program, iban_account, snapshot):
    post(api, management, program, body(amount="9999999999999000.00"))
    before = snapshot()
    answer = post(api, management, program, body(amount="9999999999999999.99"))
    assert answer.status_code == 422 and answer.json()["code"] == "LIMIT_EXCEEDED"
    assert before.unchanged()


def test_a_replay_moves_money_once(api, management, program, iban_account):
    key = str(uuid.uuid4())
    first = post(api, management, program, body(), key=key)
    again = post(api, management, program, body(), key=key)
    assert again.status_code == 200 and again.content == first.content
    assert again["Idempotent-Replayed"] == "true"
    assert Account.objects.get(id=iban_account.id).balance == Decimal("350.75")
    assert IncomingPayment.objects.count() == 1
    other = post(api, management, program, body(amount="1.00"), key=key)
    assert other.status_code == 400 and other.json()["code"] == "IDEMPOTENCY_KEY_MISMATCH"


def test_callers_other_than_the_sandbox_management_caller_are_refused(
    api, management, program, iban_account, customer_auth, customer_id_auth, production_auth
):
    assert (
        api.post(f"{URL}?programId={program.id}", body(), format="json", **customer_auth).status_code == 403
    )
    assert (
        api.post(f"{URL}?programId={program.id}", body(), format="json", **customer_id_auth).status_code
        == 401
    )
    assert (
        api.post(f"{URL}?programId={program.id}", body(), format="json", **management.access).status_code
        == 401
    )
    assert api.post(URL, body(), format="json", **management.id).status_code == 400
    assert (
        api.post(f"{URL}?programId={uuid.uuid4()}", body(), format="json", **management.id).status_code == 404
    )
    assert StatementEntry.objects.filter(incoming_payment__isnull=False).count() == 0


def test_the_lists_are_the_account_customers_and_its_custodians(api, management, program, customer2_auth):
    setup = custodian_with_clients(program, clients=1)
    account = setup.accounts[0]
    Account.objects.filter(id=account.id).update(iban=IBAN)
    data = post(api, management, program, body()).json()["data"]
    custodian = setup.person.access
    listed = api.get(account_url(account, "incoming-payments"), **custodian).json()["data"][
        "incomingPayments"
    ]
    assert [p["incomingPaymentId"] for p in listed] == [data["incomingPaymentId"]]
    events = api.get("/v1/events?type=incoming_payment.received", **custodian).json()["data"]["events"]
    assert [e["data"]["incomingPaymentId"] for e in events] == [data["incomingPaymentId"]]
    # another customer: 404 on the list and the detail, and no event
    assert api.get(account_url(account, "incoming-payments"), **customer2_auth).status_code == 404
    detail = account_url(account, f"incoming-payments/{data['incomingPaymentId']}")
    assert api.get(detail, **customer2_auth).status_code == 404
    assert (
        api.get("/v1/events?type=incoming_payment.received", **customer2_auth).json()["data"]["events"] == []
    )


def test_an_unknown_incoming_payment_is_404(api, iban_account, customer_auth):
    for wrong in (str(uuid.uuid4()), "not-an-id"):
        answer = api.get(account_url(iban_account, f"incoming-payments/{wrong}"), **customer_auth)
        assert answer.status_code == 404 and answer.json()["code"] == "RESOURCE_NOT_FOUND"


def test_customer_of_another_program_cannot_see_them(api, management, program, iban_account):
    outsider = customer_user(ProgramFactory())
    post(api, management, program, body())
    assert api.get(account_url(iban_account, "incoming-payments"), **outsider.access).status_code == 404


def test_check_ledger_holds_the_posting_to_the_debtor_it_names(api, management, program, iban_account):
    from payments.models import LedgerPosting

    post(api, management, program, body(debtorIban=DEBTOR_IBAN))
    posting = LedgerPosting.objects.get(account_id=iban_account.id, kind="INCOMING")
    assert (posting.counterparty_name, posting.counterparty_iban, posting.end_to_end_id) == (
        "Acme Ltd",
        DEBTOR_IBAN,
        "NOTPROVIDED",
    )
    LedgerPosting.objects.filter(id=posting.id).update(counterparty_name="Someone Else")
    assert ledger_check().misstated_lines == [posting.id]
    LedgerPosting.objects.filter(id=posting.id).update(counterparty_name="Acme Ltd")
    assert ledger_check().ok
