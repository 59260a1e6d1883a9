"""A draft's verification results (its valid and invalid payments) are stored in
the domain's names; the draft's GET and its status report answer exactly what
they answered when the results were stored in the API's names."""

import importlib
import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from batches.models import Draft
from batches.sent import CheckedPayment, SentAccount, SentPayee, SentPayer, SentPayment
from bench.pain001 import Instruction, Tx, pain001, scan
from tests.batches.conftest import PAYEE_IBAN, URL, payment, verify
from tests.batches.iso20022 import report, statuses, upload

MIGRATION = "0005_verified_payments_in_domain_names"
BEFORE = "0004_stored_payments_in_domain_names"
BAD_PAYEE = {"name": "X", "account": {"type": "uk", "sortCode": "12"}, "accountType": "BUSINESS"}


def test_verification_stores_its_results_in_domain_names(api, custodian_auth, custodian_accounts):
    first = custodian_accounts[0]
    sent = [payment(first, "3.00", payee=PAYEE_IBAN), payment(first, "4.00", payee=BAD_PAYEE)]
    draft_id = verify(api, custodian_auth, sent)

    draft = Draft.objects.get(id=draft_id)
    payer = SentPayer(
        account=SentAccount(kind="uk", sort_code=first["sortCode"], account_number=first["accountNumber"])
    )
    assert draft.valid_payments == [
        {
            "index": 0,
            "payment": {
                "payer": {
                    "account": {
                        "kind": "uk",
                        "sort_code": first["sortCode"],
                        "account_number": first["accountNumber"],
                    }
                },
                "payee": {
                    "name": "Hans Payee",
                    "account": {"kind": "iban", "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"},
                },
                "reference": "Invoice 1",
                "amount": "3.00",
            },
        }
    ]
    valid, invalid = draft.checked_payments()
    assert [(c.index, c.valid) for c in valid] == [(0, True)]
    assert invalid == [
        CheckedPayment(
            index=1,
            payment=SentPayment(
                payer=payer,
                payee=SentPayee(
                    name="X", account=SentAccount(kind="uk", sort_code="12"), payee_type="BUSINESS"
                ),
                reference="Invoice 1",
                amount="4.00",
            ),
            reasons=(
                "payee.account.sortCode: must be 6 digits.",
                "payee.account.accountNumber: must be 8 digits.",
            ),
        )
    ]
    # The GET shows each payment as it was sent, in the API's names.
    body = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert body["validPayments"] == [{"index": 0, "payment": sent[0]}]
    assert body["invalidPayments"] == [{"index": 1, "payment": sent[1], "reasons": list(invalid[0].reasons)}]


def test_a_result_converts_to_its_stored_form_and_back():
    checked = CheckedPayment(
        index=3,
        payment=SentPayment(payee=SentPayee(name=""), amount="", end_to_end_id="E-3", currency="EUR"),
        reasons=("payee.name: required.",),
    )

    assert CheckedPayment.from_stored(checked.to_stored()) == checked
    assert CheckedPayment.from_stored({"index": 0, "payment": {}}) == CheckedPayment(0, SentPayment())


def _migrate(name: str | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("batches", name)] if name else executor.loader.graph.leaf_nodes())


@pytest.fixture
def migrations_restored(transactional_db):
    """The database is migrated back to the latest, whatever the test does."""
    yield
    _migrate()


def test_the_migration_moves_results_both_ways_and_answers_stay_byte_identical(
    api, custodian_auth, custodian_accounts, migrations_restored
):
    first = custodian_accounts[0]
    json_draft_id = verify(
        api,
        custodian_auth,
        [payment(first, "3.00", payee=PAYEE_IBAN), payment(first, "4.00", payee=BAD_PAYEE)],
    )
    debtor = scan(first["sortCode"], first["accountNumber"])
    file_body = pain001(
        [
            Instruction(
                debtor,
                [Tx("E-1", "1.00", scan("200000", "55779911")), Tx("E-2", "2.00", scan("1", "2"))],
                execution_date="2026-12-01",
            )
        ],
        msg_id="VERIFIED-1",
    )
    file_draft_id = upload(api, custodian_auth, file_body).json()["requestId"]
    shown = {
        draft_id: api.get(f"{URL}/{draft_id}", **custodian_auth).content
        for draft_id in (json_draft_id, file_draft_id)
    }
    file_report = statuses(report(api, custodian_auth, file_draft_id))
    stored = {str(d.id): (d.valid_payments, d.invalid_payments) for d in Draft.objects.all()}

    _migrate(BEFORE)

    # Back in the API's names: each entry exactly as the GET answers it.
    for draft_id, content in shown.items():
        # Read column by column: the model has columns later migrations add.
        draft = Draft.objects.only("valid_payments", "invalid_payments").get(id=draft_id)
        body = json.loads(content)["data"]["draft"]
        assert (draft.valid_payments, draft.invalid_payments) == (
            body["validPayments"],
            body["invalidPayments"],
        )
    file_results = Draft.objects.only("invalid_payments").get(id=file_draft_id).invalid_payments
    assert [entry["payment"]["endToEndId"] for entry in file_results] == ["E-2"]
    assert file_results[0]["payment"]["payer"]["account"]["type"] == "uk"

    # Forward to the latest: this migration, then those after it, which the code needs.
    _migrate()

    assert {str(d.id): (d.valid_payments, d.invalid_payments) for d in Draft.objects.all()} == stored
    for draft_id, content in shown.items():
        assert api.get(f"{URL}/{draft_id}", **custodian_auth).content == content
    assert statuses(report(api, custodian_auth, file_draft_id)) == file_report


def test_each_direction_can_run_again():
    migration = importlib.import_module(f"batches.migrations.{MIGRATION}")
    api_form = [
        {
            "index": 2,
            "payment": {
                "payer": {"account": {"type": "iban", "iban": "GB33BUKB20201555555555"}},
                "payee": {"name": "J", "account": {"type": "uk", "sortCode": "1"}, "accountType": "X"},
                "endToEndId": "E-2",
                "currency": "GBP",
            },
            "reasons": ["payee.accountType: must be one of CONSUMER, BUSINESS."],
        }
    ]
    domain = migration.results_to_domain(api_form)

    assert domain[0]["payment"] == {
        "payer": {"account": {"kind": "iban", "iban": "GB33BUKB20201555555555"}},
        "payee": {"name": "J", "account": {"kind": "uk", "sort_code": "1"}, "payee_type": "X"},
        "end_to_end_id": "E-2",
        "currency": "GBP",
    }
    assert domain[0]["reasons"] == api_form[0]["reasons"]
    assert migration.results_to_domain(domain) == domain
    assert migration.results_to_api(domain) == api_form
    assert migration.results_to_api(migration.results_to_api(domain)) == api_form
    assert migration.results_to_domain(None) is None
