"""The back office's retry runs the acceptance decision on the instruction an
item was given, never on one rebuilt from what the item kept.

Reported: a pain.001 file instructed EUR 7.50 from a GBP account; submit marked
the item invalid (AM03) and the batch ended PARTIALLY_FAILED; "Retry selected
failed items" then paid it as GBP 7.50, turned the batch COMPLETED and its
pain.002 to ACSC. The item also showed "7.50 GBP" everywhere.
"""

import uuid
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from batches.models import Batch, BatchItem
from bench.pain001 import V09, Instruction, Tx, iban, pain001, scan
from payments.models import PaymentRequest
from tests.backoffice.conftest import staff_user
from tests.batches.conftest import URL, balance
from tests.batches.iso20022 import report, statuses, upload
from tests.batches.test_submit import totp

pytestmark = pytest.mark.django_db
PAYEE_DE = iban("DE89370400440532013000", "COBADEFFXXX")
ITEMS_URL = "/admin/batches/batchitem/"


@pytest.fixture
def operations_client(client):
    """The back office, signed in as a member of the operations group."""
    client.force_login(staff_user("operations"))
    return client


def _submitted_file(api, auth, user, payer: dict) -> str:
    """A file with a GBP payment and a EUR one from the same GBP account, submitted."""
    file = pain001(
        [
            Instruction(
                debtor=scan(payer["sortCode"], payer["accountNumber"]),
                transactions=[
                    Tx("E2E-GBP", "10.00", PAYEE_DE, creditor_name="Hans Payee"),
                    Tx("E2E-EUR", "7.50", PAYEE_DE, creditor_name="Hans Payee", currency="EUR"),
                ],
            )
        ],
        msg_id="ERP-RETRY-EUR",
        version=V09,
    )
    uploaded = upload(api, auth, file)
    assert uploaded.status_code == 200, uploaded.json()
    draft_id = uploaded.json()["requestId"]
    initiated = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **auth)
    sca = initiated.json()["data"]["scaChallenge"]
    body = {"action": "submit", "batchId": draft_id, "scaChallenge": sca, "confirmation": totp(user)}
    submitted = api.post(URL, body, format="json", **auth)
    assert submitted.status_code == 200, submitted.json()
    return draft_id


def test_an_item_instructed_in_another_currency_is_never_paid_by_a_retry(
    api,
    custodian_auth,
    custodian_user,
    custodian_accounts,
    operations_client,
    django_capture_on_commit_callbacks,
):
    payer = custodian_accounts[0]
    batch_id = _submitted_file(api, custodian_auth, custodian_user, payer)
    eur = BatchItem.objects.get(batch_id=batch_id, end_to_end_id="E2E-EUR")
    before = {
        "balance": balance(payer["accountId"]),
        "status": Batch.objects.get(id=batch_id).status,
        "report": statuses(report(api, custodian_auth, batch_id)),
        "requests": PaymentRequest.objects.count(),
    }
    assert before["status"] == "PARTIALLY_FAILED"
    assert before["report"]["group"] == "PART"

    # The item shows the currency it was instructed in, in the API and in the admin.
    shown = api.get(f"{URL}/{batch_id}", **custodian_auth).json()["data"]["paymentsBatchItems"]
    assert [(item["endToEndId"], item["amount"], item["currency"]) for item in shown] == [
        ("E2E-GBP", "10.00", "GBP"),
        ("E2E-EUR", "7.50", "EUR"),
    ]
    client = operations_client
    listed = client.get(ITEMS_URL, {"q": str(eur.id)}).content.decode()
    assert "7.50 EUR" in listed and "7.50 GBP" not in listed

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            ITEMS_URL, {"action": "retry", "index": "0", "_selected_action": [str(eur.id)]}, follow=True
        )

    messages = [str(message) for message in response.context["messages"]]
    assert any("invalid at submit" in message for message in messages), messages
    eur.refresh_from_db()
    assert (eur.status, eur.payment_id, eur.currency) == ("FAILED", None, "EUR")
    assert balance(payer["accountId"]) == before["balance"]
    assert PaymentRequest.objects.count() == before["requests"]
    assert Batch.objects.get(id=batch_id).status == before["status"]
    assert statuses(report(api, custodian_auth, batch_id)) == before["report"]


def test_a_file_items_ids_and_instructed_currency_are_kept_whole(
    api, custodian_auth, custodian_user, custodian_accounts
):
    payer = custodian_accounts[0]
    file = pain001(
        [
            Instruction(
                debtor=scan(payer["sortCode"], payer["accountNumber"]),
                transactions=[
                    Tx("E2E-1", "3.00", PAYEE_DE, creditor_name="Hans Payee", instruction_id="INSTR-1")
                ],
            )
        ],
        msg_id="ERP-IDS",
        version=V09,
    )
    uploaded = upload(api, custodian_auth, file)
    draft_id = uploaded.json()["requestId"]
    initiated = api.post(URL, {"action": "initiate", "batchId": draft_id}, format="json", **custodian_auth)
    sca = initiated.json()["data"]["scaChallenge"]
    body = {
        "action": "submit",
        "batchId": draft_id,
        "scaChallenge": sca,
        "confirmation": totp(custodian_user),
    }
    assert api.post(URL, body, format="json", **custodian_auth).status_code == 200

    instruction = BatchItem.objects.get(batch_id=draft_id).instruction()
    assert (
        instruction.message_id,
        instruction.payment_information_id,
        instruction.instruction_id,
        instruction.end_to_end_id,
        instruction.amount,
        instruction.currency,
        instruction.reference,
        instruction.payee.iban,
    ) == (
        "ERP-IDS",
        "PMT-1",
        "INSTR-1",
        "E2E-1",
        Decimal("3.00"),
        "GBP",
        "Invoice 1",
        "DE89370400440532013000",
    )
    # The InstrId is kept, not shown as part of the payment sent.
    draft_entry = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["paymentsBatchItems"][0]
    assert "INSTR-1" not in str(draft_entry)


def _migrate(target: str | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("batches", target)] if target else executor.loader.graph.leaf_nodes())


@pytest.fixture
def migrations_restored(transactional_db):
    yield
    _migrate()


def test_items_stored_before_they_kept_their_instruction_get_it_back(
    api, custodian_auth, custodian_user, custodian_accounts, migrations_restored
):
    """Before, an item kept its payer's currency and no failure code: the
    migration takes the instructed currency back from the file's draft, and
    marks items invalid at submit so that a retry refuses them."""
    payer = custodian_accounts[0]
    batch_id = _submitted_file(api, custodian_auth, custodian_user, payer)
    after = {
        item.end_to_end_id: (item.currency, item.failure_code, item.message_id, item.payment_information_id)
        for item in BatchItem.objects.filter(batch_id=batch_id)
    }
    assert after == {
        "E2E-GBP": ("GBP", "", "ERP-RETRY-EUR", "PMT-1"),
        "E2E-EUR": ("EUR", "INVALID", "ERP-RETRY-EUR", "PMT-1"),
    }

    _migrate("0005_verified_payments_in_domain_names")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT end_to_end_id, currency, instruction_id FROM batches_batchitem WHERE batch_id = %s",
            [uuid.UUID(batch_id).hex if connection.vendor == "sqlite" else batch_id],
        )
        assert sorted(cursor.fetchall()) == [("E2E-EUR", "GBP", "PMT-1"), ("E2E-GBP", "GBP", "PMT-1")]
    _migrate()

    assert {
        item.end_to_end_id: (item.currency, item.failure_code, item.message_id, item.payment_information_id)
        for item in BatchItem.objects.filter(batch_id=batch_id)
    } == after
