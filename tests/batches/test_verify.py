"""verify: a draft stored at once, its items checked by a task, read back by id."""

from datetime import timedelta

import pytest
from django.utils import timezone

from batches.models import Draft
from batches.services.verification import draft_verify
from tests.batches.conftest import PAYEE_IBAN, URL, other_custodian_with_account, payment, verify

pytestmark = pytest.mark.django_db


def test_verify_stores_a_draft_and_reports_valid_and_invalid_payments(
    api, custodian_auth, custodian_accounts
):
    first, second = custodian_accounts[:2]
    payments = [
        payment(first, "10.00"),
        payment(second, "2.50", payee=PAYEE_IBAN),
        payment(first, "0"),
        {
            **payment(first),
            "payee": {"name": "", "account": {"type": "uk", "sortCode": "12", "accountNumber": "x"}},
        },
    ]

    response = api.post(URL, {"action": "verify", "payments": payments}, format="json", **custodian_auth)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True and body["status"] == "DRAFT" and "data" not in body
    detail = api.get(f"{URL}/{body['requestId']}", **custodian_auth).json()["data"]
    assert detail["batchId"] == body["requestId"]
    draft = detail["draft"]
    assert draft["status"] == "DRAFT"
    assert draft["paymentsCount"] == 4
    assert draft["payloadStatus"] == "COMPLETE"
    assert [entry["index"] for entry in draft["validPayments"]] == [0, 1]
    assert draft["validPayments"][1]["payment"] == payments[1]
    invalid = {entry["index"]: entry["reasons"] for entry in draft["invalidPayments"]}
    assert list(invalid) == [2, 3]
    assert any(reason.startswith("amount:") for reason in invalid[2])
    assert {reason.split(":")[0] for reason in invalid[3]} == {
        "payee.name",
        "payee.account.sortCode",
        "payee.account.accountNumber",
    }


def test_a_draft_is_listed_as_pending_before_its_verification_runs(
    api, plain_api, custodian_auth, custodian_accounts, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        draft_id = verify(plain_api, custodian_auth, [payment(custodian_accounts[0])])
    assert len(callbacks) == 1

    listed = api.get(f"{URL}?drafts=true", **custodian_auth).json()["data"]["paymentsBatches"]
    assert [(d["id"], d["payloadStatus"], d["status"]) for d in listed] == [(draft_id, "PENDING", "DRAFT")]
    assert set(listed[0]) == {
        "id",
        "status",
        "paymentsCount",
        "expiresAt",
        "createdDateTime",
        "payloadStatus",
    }
    pending = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert pending["payloadStatus"] == "PENDING"
    assert "validPayments" not in pending and "invalidPayments" not in pending

    callbacks[0]()
    done = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert done["payloadStatus"] == "COMPLETE" and len(done["validPayments"]) == 1


def test_verification_runs_twice_without_harm(api, custodian_auth, custodian_accounts):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0])])
    before = Draft.objects.get(id=draft_id)
    draft_verify(draft_id)
    after = Draft.objects.get(id=draft_id)
    assert (after.valid_payments, after.invalid_payments, after.verified_at) == (
        before.valid_payments,
        before.invalid_payments,
        before.verified_at,
    )


def test_payer_of_another_custodian_or_a_plain_customer_is_an_invalid_item(
    api, custodian_auth, custodian_accounts, program, customer_account
):
    _, foreign = other_custodian_with_account(program.id)
    plain = customer_account
    draft_id = verify(api, custodian_auth, [payment(foreign), payment(plain), payment(custodian_accounts[0])])

    draft = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert [entry["index"] for entry in draft["validPayments"]] == [2]
    for entry in draft["invalidPayments"]:
        assert entry["reasons"] == ["payer.account: not an account the caller may pay from."]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"amount": "10.001"}, "amount:"),
        ({"amount": "-1"}, "amount:"),
        ({"amount": "1e3"}, "amount:"),
        ({"amount": "٣"}, "amount:"),
        ({"amount": ""}, "amount:"),
        ({"reference": ""}, "reference: Must be 1 to 140 characters for this account."),
        ({"reference": "x" * 141}, "reference: Must be 1 to 140 characters"),
        ({"reference": "bad\nline"}, "reference: Must be a single line of text"),
        (
            {"payee": {"name": "A", "account": {"type": "iban", "iban": "DE89370400440532013001"}}},
            "payee.account.iban",
        ),
        (
            {
                "payee": {
                    "name": "A",
                    "account": {"type": "iban", "iban": "DE89370400440532013000", "bic": "X"},
                }
            },
            "payee.account.bic",
        ),
        ({"payee": {"name": "A", "account": {"type": "swift"}}}, "payee.account.type"),
        (
            {
                "payee": {
                    "name": "A",
                    "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
                    "accountType": "ALIEN",
                }
            },
            "payee.accountType",
        ),
        (
            {"payer": {"account": {"type": "uk", "sortCode": "20000", "accountNumber": "55779911"}}},
            "payer.account.sortCode",
        ),
        ({"payer": {}}, "payer.account: required."),
    ],
)
def test_each_item_rule(api, custodian_auth, custodian_accounts, change, reason):
    draft_id = verify(api, custodian_auth, [{**payment(custodian_accounts[0]), **change}])
    draft = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert draft["validPayments"] == []
    assert any(r.startswith(reason) for r in draft["invalidPayments"][0]["reasons"]), draft["invalidPayments"]


def test_reference_rules_are_the_payer_accounts(api, custodian_auth, custodian_accounts):
    from bankapi.models import Account

    Account.objects.filter(id=custodian_accounts[0]["accountId"]).update(reference_max=35, reference_min=3)
    draft_id = verify(
        api,
        custodian_auth,
        [payment(custodian_accounts[0], reference="x" * 36), payment(custodian_accounts[0], reference="ab")],
    )
    reasons = [
        e["reasons"]
        for e in api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]["invalidPayments"]
    ]
    assert reasons == [
        ["reference: Must be 3 to 35 characters for this account."],
        ["reference: Must be 3 to 35 characters for this account."],
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"payments": []}, "action"),
        ({"action": "verify"}, "payments"),
        ({"action": "verify", "payments": "x"}, "payments"),
        ({"action": "verify", "payments": []}, "payments"),
        ({"action": "verify", "payments": [1]}, "payments.0"),
        ({"action": "verify", "payments": [{"amount": 10}]}, "payments.0.amount"),
        ({"action": "verify", "payments": [{"amount": "1", "colour": "red"}]}, "payments.0.colour"),
        (
            {"action": "verify", "payments": [{"payee": {"name": "x", "account": {"type": "uk", "x": "1"}}}]},
            "payments.0.payee.account.x",
        ),
        ({"action": "verify", "payments": [{"payee": {"name": None}}]}, "payments.0.payee.name"),
        ({"action": "verify", "payments": [{"payer": []}]}, "payments.0.payer"),
        # PostgreSQL cannot store a NUL in JSON: refused as in every other text field.
        ({"action": "verify", "payments": [{"amount": "1\x00"}]}, "payments.0.amount"),
        (
            {"action": "verify", "payments": [{"payee": {"account": {"iban": "GB\x00"}}}]},
            "payments.0.payee.account.iban",
        ),
        ({"action": "explode", "payments": [{}]}, "action"),
        ({"action": "verify", "payments": [{}], "extra": 1}, "extra"),
        ({"action": "verify", "payments": [{}], "programId": "x"}, "programId"),
    ],
)
def test_verify_refuses_a_body_of_the_wrong_shape(api, custodian_auth, body, field):
    response = api.post(URL, body, format="json", **custodian_auth)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert field in [error["field"] for error in response.json()["errors"]]
    assert not Draft.objects.exists()


def test_verify_refuses_more_than_ten_thousand_payments(api, custodian_auth):
    response = api.post(URL, {"action": "verify", "payments": [{}] * 10_001}, format="json", **custodian_auth)
    assert response.status_code == 400
    assert not Draft.objects.exists()


def test_empty_strings_inside_items_are_item_rules_not_400(api, custodian_auth):
    draft_id = verify(
        api, custodian_auth, [{}, {"payer": {"account": {}}, "payee": {}, "reference": "", "amount": ""}]
    )
    draft = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert len(draft["invalidPayments"]) == 2


def test_duplicate_keys_at_any_level_are_a_400(api, custodian_auth):
    raw = '{"action": "verify", "payments": [{"amount": "1", "amount": "2"}]}'
    response = api.post(URL, raw, content_type="application/json", **custodian_auth)
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert not Draft.objects.exists()


def test_an_expired_draft_shows_no_payload(api, custodian_auth, custodian_accounts):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0])])
    Draft.objects.filter(id=draft_id).update(expires_at=timezone.now() - timedelta(seconds=1))

    draft = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]["draft"]
    assert draft["status"] == "EXPIRED"
    assert "validPayments" not in draft and "invalidPayments" not in draft
    listed = api.get(f"{URL}?drafts=true", **custodian_auth).json()["data"]["paymentsBatches"]
    assert [d["status"] for d in listed] == ["EXPIRED"]


def test_drafts_are_their_owners_only(
    api, custodian_auth, custodian_accounts, customer_auth, management_auth, program
):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0])])

    for auth, url in (
        (customer_auth, f"{URL}/{draft_id}"),
        (management_auth, f"{URL}/{draft_id}?programId={program.id}"),
    ):
        response = api.get(url, **auth)
        assert response.status_code == 404
        assert response.json()["code"] == "RESOURCE_NOT_FOUND"
    assert api.get(f"{URL}?drafts=true", **customer_auth).json()["data"]["paymentsBatches"] == []
    management_list = api.get(f"{URL}?drafts=true&programId={program.id}", **management_auth)
    assert management_list.json()["data"]["paymentsBatches"] == []


def test_a_customer_verifies_from_its_own_accounts(api, customer_auth, customer_account, customer2_account):
    own, foreign = customer_account, customer2_account
    draft_id = verify(api, customer_auth, [payment(own), payment(foreign)])
    draft = api.get(f"{URL}/{draft_id}", **customer_auth).json()["data"]["draft"]
    assert [e["index"] for e in draft["validPayments"]] == [0]
    assert [e["index"] for e in draft["invalidPayments"]] == [1]


def test_verify_takes_the_access_token_only(api, custodian_setup, custodian_accounts):
    auth = custodian_setup.person.id
    response = api.post(
        URL, {"action": "verify", "payments": [payment(custodian_accounts[0])]}, format="json", **auth
    )
    assert response.status_code == 401
    assert api.post(URL, {"action": "verify", "payments": [{}]}, format="json").status_code == 401


def test_management_callers_cannot_post(api, management_auth, program, custodian_accounts):
    url = f"{URL}?programId={program.id}"
    response = api.post(
        url,
        {"action": "verify", "payments": [payment(custodian_accounts[0])]},
        format="json",
        **management_auth,
    )
    assert response.status_code == 403
    assert not Draft.objects.exists()
