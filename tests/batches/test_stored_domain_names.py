"""A draft's payments are stored in the domain's names; they convert back to
exactly what was sent, and drafts and challenges made before the migration that
moved them still initiate and submit after it."""

import hashlib
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from batches.models import Batch, BatchItem, Draft, ScaChallenge
from batches.rules import payments_hash, sent_payment_from_wire, sent_payment_to_wire
from batches.sent import SentAccount, SentPayee, SentPayer, SentPayment
from bench.pain001 import Instruction, Tx, pain001, scan
from tests.batches.conftest import PAYEE_IBAN, URL, payment, verify
from tests.batches.helpers import batch_submitted
from tests.batches.iso20022 import upload
from tests.batches.test_submit import totp

MIGRATION = "stored_payments_in_domain_names"
EXECUTION_DAY = "2026-12-01"

IBAN_PAYMENT_WITH_A_TYPE = {
    "payer": {"account": {"type": "uk", "sortCode": "04-00-04", "accountNumber": "12345678"}},
    "payee": {
        "name": "Acme GmbH",
        "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
        "accountType": "BUSINESS",
    },
    "reference": "Invoice 7",
    "amount": "12.50",
}
STORED = {
    "payer": {"account": {"kind": "uk", "sort_code": "04-00-04", "account_number": "12345678"}},
    "payee": {
        "name": "Acme GmbH",
        "account": {"kind": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
        "payee_type": "BUSINESS",
    },
    "reference": "Invoice 7",
    "amount": "12.50",
}
# Shapes verify takes (every field of an item is optional) and a file's payment.
AS_SENT = [
    IBAN_PAYMENT_WITH_A_TYPE,
    {},
    {"payer": {}, "payee": {}, "reference": "", "amount": ""},
    {"payee": {"name": " ", "account": {"type": "bank"}}, "amount": "0"},
    {"payer": {"account": {}}, "payee": {"account": {"type": "uk", "iban": "x", "sortCode": ""}}},
    {
        "payer": {"account": {"type": "iban", "iban": "GB33BUKB20201555555555"}},
        "payee": {
            "name": "Jane",
            "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
        },
        "reference": "E-1",
        "amount": "1.00",
        "endToEndId": "E-1",
        "currency": "GBP",
    },
]


def test_a_verified_draft_stores_its_payments_in_domain_names(api, custodian_auth):
    draft_id = verify(api, custodian_auth, [IBAN_PAYMENT_WITH_A_TYPE])

    draft = Draft.objects.get(id=draft_id)
    assert draft.payments == [STORED]
    assert draft.sent_payments() == [
        SentPayment(
            payer=SentPayer(account=SentAccount(kind="uk", sort_code="04-00-04", account_number="12345678")),
            payee=SentPayee(
                name="Acme GmbH",
                account=SentAccount(kind="iban", iban="DE89370400440532013000", bic="COBADEFFXXX"),
                payee_type="BUSINESS",
            ),
            reference="Invoice 7",
            amount="12.50",
        )
    ]
    # The draft's GET still shows each payment as it was sent.
    body = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert [entry["payment"] for entry in body["invalidPayments"]] == [IBAN_PAYMENT_WITH_A_TYPE]


@pytest.mark.parametrize("sent", AS_SENT)
def test_a_payment_converts_back_to_exactly_what_was_sent(sent):
    domain = sent_payment_from_wire(sent)

    assert sent_payment_to_wire(domain) == sent
    assert SentPayment.from_stored(domain.to_stored()) == domain


@pytest.mark.parametrize(
    "odd",
    [{"unknown": "x"}, {"amount": 10}, {"payer": "x"}, {"payee": {"account": {"type": None}}}],
)
def test_a_payment_the_shape_check_would_refuse_is_a_bug_not_a_dropped_field(odd):
    with pytest.raises(ValueError):
        sent_payment_from_wire(odd)


def test_the_challenge_hash_is_the_one_made_before_payments_were_stored_in_domain_names():
    # As initiate computed it when drafts kept the API's names: over the payments as sent.
    before = hashlib.sha256(
        json.dumps({"payments": AS_SENT, "draft": "d"}, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()

    assert payments_hash([sent_payment_from_wire(sent) for sent in AS_SENT], "d") == before


def _migration() -> tuple[str, str]:
    graph = MigrationExecutor(connection).loader.graph
    (node,) = [key for key in graph.nodes if key[0] == "batches" and key[1].endswith(MIGRATION)]
    (before,) = graph.node_map[node].parents
    return node[1], before.key[1]


def _migrate(name: str | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("batches", name)] if name else executor.loader.graph.leaf_nodes())


@pytest.fixture
def migrations_restored(transactional_db):
    """The database is migrated back to the latest, whatever the test does."""
    yield
    _migrate()


def _old_hash(payments: list, draft_id: str) -> str:
    """The hash initiate bound a challenge to before the migration: over the
    draft's payments as they were stored then."""
    canonical = json.dumps({"payments": payments, "draft": draft_id}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def test_drafts_and_challenges_made_before_the_migration_submit_after_it(
    api, custodian_auth, custodian_user, custodian_accounts, migrations_restored
):
    first = custodian_accounts[0]
    debtor = scan(first["sortCode"], first["accountNumber"])
    file_body = pain001(
        [
            Instruction(
                debtor,
                [Tx("E-1", "1.00", scan("200000", "55779911")), Tx("E-2", "2.00", scan("1", "2"))],
                execution_date=EXECUTION_DAY,
            )
        ],
        msg_id="MIGRATED-1",
    )
    file_draft_id = upload(api, custodian_auth, file_body).json()["requestId"]
    json_payments = [payment(first, "3.00"), payment(first, "4.00", payee=PAYEE_IBAN)]
    json_draft_id = verify(api, custodian_auth, json_payments)
    stored_after = {str(d.id): (d.payments, d.instructions) for d in Draft.objects.all()}
    bad_payee = {"name": "X", "account": {"type": "uk", "sortCode": "12"}, "accountType": "BUSINESS"}
    earlier = batch_submitted(
        custodian_user, [payment(first, "5.00", payee=PAYEE_IBAN), payment(first, "6.00", payee=bad_payee)]
    )
    shown = api.get(f"{URL}/{earlier.id}", **custodian_auth).json()
    items_after = {str(i.id): i.payee for i in BatchItem.objects.all()}
    _, before = _migration()

    _migrate(before)

    # The drafts are back in the API's names, exactly as they were sent (read
    # column by column: the model has columns later migrations add).
    assert Draft.objects.only("payments").get(id=json_draft_id).payments == json_payments
    file_draft = Draft.objects.only("payments", "instructions").get(id=file_draft_id)
    file_payments = file_draft.payments
    assert file_draft.instructions == [{"id": "PMT-1", "executionDate": EXECUTION_DAY, "count": 2}]
    assert [p["endToEndId"] for p in file_payments] == ["E-1", "E-2"]
    assert file_payments[0]["payee"]["account"] == {
        "type": "uk",
        "sortCode": "200000",
        "accountNumber": "55779911",
    }
    # Read column by column: the model has columns later migrations add.
    assert list(
        BatchItem.objects.filter(batch=earlier).order_by("index").values_list("payee", flat=True)
    ) == [
        {
            "name": "Hans Payee",
            "accountNumber": None,
            "sortCode": None,
            "iban": "DE89370400440532013000",
            "bic": "COBADEFFXXX",
        },
        {
            "name": "X",
            "accountNumber": None,
            "sortCode": "12",
            "iban": None,
            "bic": None,
            "accountType": "BUSINESS",
        },
    ]
    # A challenge initiate made then for the file's draft, as it made them then.
    challenge = ScaChallenge.objects.create(
        program_id=custodian_user.program_id,
        sandbox=custodian_user.sandbox,
        custodian_id=custodian_user.custodian_id,
        user=custodian_user,
        payments_hash=_old_hash(file_payments, file_draft_id),
        draft_id=file_draft_id,
        total_amount="1.00",
        currency="GBP",
        expires_at=timezone.now() + timedelta(minutes=5),
    )

    # Forward to the latest: this migration, then those after it, which the code needs.
    _migrate()

    assert {str(d.id): (d.payments, d.instructions) for d in Draft.objects.all()} == stored_after
    assert {str(i.id): i.payee for i in BatchItem.objects.all()} == items_after
    assert api.get(f"{URL}/{earlier.id}", **custodian_auth).json() == shown
    sca = {"id": str(challenge.id), "expiresAt": challenge.expires_at.isoformat()}
    submitted = api.post(
        URL,
        {
            "action": "submit",
            "batchId": file_draft_id,
            "scaChallenge": sca,
            "confirmation": totp(custodian_user),
        },
        format="json",
        **custodian_auth,
    )
    assert submitted.status_code == 200, submitted.json()
    assert submitted.json()["data"]["counts"] == {"total": 2, "valid": 1, "invalid": 1}
    items = BatchItem.objects.filter(batch_id=file_draft_id).order_by("index")
    assert [(i.end_to_end_id, i.status) for i in items] == [("E-1", "SUCCESS"), ("E-2", "FAILED")]
    assert {(i.payment_information_id, i.scheduled_date.isoformat()) for i in items} == {
        ("PMT-1", EXECUTION_DAY)
    }
    # The JSON draft verified before the migration initiates with the payments it was sent.
    initiated = api.post(
        URL,
        {"action": "initiate", "batchId": json_draft_id, "payments": json_payments},
        format="json",
        **custodian_auth,
    )
    assert initiated.status_code == 200, initiated.json()
    assert initiated.json()["data"]["totalAmount"] == "7.00"
    assert Batch.objects.count() == 2
