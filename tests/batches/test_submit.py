"""passkey-challenge and submit: every confirmation method verified for real,
every refusal leaving nothing behind, a retry answered with the first answer."""

from datetime import timedelta
from decimal import Decimal

import pyotp
import pytest
from django.utils import timezone

from authn.models import User
from authn.services.stepup import step_up_pin_set
from bankapi.models import IdempotencyRecord
from batches.models import Batch, Draft, ScaChallenge
from tests.batches.conftest import URL, balance, payment, verify
from tests.support.factories import funded_account, uk_account
from tests.support.passkeys import enrol_passkey

pytestmark = pytest.mark.django_db
KEY = "6f1c1c3e-8a55-4c1e-9a3b-6a3c2f9d0b11"


def totp(user: User) -> dict:
    # A code is accepted once per 30-second step: a test that confirms twice
    # forgets the step it spent, as if the next one had come.
    User.objects.filter(id=user.id).update(totp_last_step=0)
    return {"method": "totp", "code": pyotp.TOTP(user.totp_secret).now()}


def wrong_totp(user: User) -> dict:
    current = {pyotp.TOTP(user.totp_secret).at(timezone.now() + timedelta(seconds=s)) for s in (-30, 0, 30)}
    return {"method": "totp", "code": next(c for c in ("000000", "111111", "222222") if c not in current)}


def initiate(api, auth, payments, url=URL, **extra) -> dict:
    response = api.post(url, {"action": "initiate", "payments": payments, **extra}, format="json", **auth)
    assert response.status_code == 200, response.json()
    return response.json()["data"]["scaChallenge"]


def submit(api, auth, payments, sca, confirmation, url=URL, **extra):
    body = {
        "action": "submit",
        "payments": payments,
        "scaChallenge": sca,
        "confirmation": confirmation,
        **extra,
    }
    return api.post(url, body, format="json", **auth)


@pytest.fixture
def payments(custodian_accounts) -> list[dict]:
    return [
        payment(custodian_accounts[0], "10.00"),
        payment(custodian_accounts[1], "5.00"),
        payment(custodian_accounts[0], "0"),
    ]


def test_submit_with_totp_creates_and_pays_the_batch(
    api, custodian_auth, custodian_user, custodian_accounts, payments
):
    first, second = (entry["accountId"] for entry in custodian_accounts)
    before = (balance(first), balance(second))
    sca = initiate(api, custodian_auth, payments)

    response = submit(api, custodian_auth, payments, sca, totp(custodian_user))

    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    assert data["status"] == "CREATED"
    assert data["counts"] == {"total": 3, "valid": 2, "invalid": 1}
    # Processing ran after commit (in-process here).
    detail = api.get(f"{URL}/{data['batchId']}", **custodian_auth).json()["data"]
    assert detail["status"] == "PARTIALLY_FAILED"
    assert [item["status"] for item in detail["paymentsBatchItems"]] == ["SUCCESS", "SUCCESS", "FAILED"]
    assert (balance(first), balance(second)) == (before[0] - Decimal("10.00"), before[1] - Decimal("5.00"))
    assert ScaChallenge.objects.get(id=sca["id"]).consumed_at is not None
    listed = api.get(f"{URL}?includeItemSummary=true", **custodian_auth).json()["data"]["paymentsBatches"][0]
    assert listed["itemsStatus"] == {"completed": 2, "pending": 0, "processing": 0, "failed": 1}
    assert listed["totalAmount"] == "15.00"


def test_a_wrong_code_is_refused_and_the_challenge_stays_usable(
    api, custodian_auth, custodian_user, payments
):
    sca = initiate(api, custodian_auth, payments)

    response = submit(api, custodian_auth, payments, sca, wrong_totp(custodian_user))

    assert response.status_code == 401
    assert response.json()["code"] == "INVALID_CREDENTIALS"
    assert not Batch.objects.exists()
    assert ScaChallenge.objects.get(id=sca["id"]).consumed_at is None
    assert submit(api, custodian_auth, payments, sca, totp(custodian_user)).status_code == 200


def test_a_used_challenge_cannot_submit_again(api, custodian_auth, custodian_user, payments):
    sca = initiate(api, custodian_auth, payments)
    assert submit(api, custodian_auth, payments, sca, totp(custodian_user)).status_code == 200

    again = submit(api, custodian_auth, payments, sca, totp(custodian_user))

    assert again.status_code == 400
    assert again.json()["errors"][0]["field"] == "scaChallenge"
    assert Batch.objects.count() == 1


def test_a_stale_or_unknown_challenge_is_a_400(
    api, custodian_auth, custodian_user, payments, customer_auth, customer_account
):
    sca = initiate(api, custodian_auth, payments)
    ScaChallenge.objects.filter(id=sca["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    someone_elses = initiate(api, customer_auth, [payment(customer_account)])

    for challenge in (sca, {"id": "nope", "expiresAt": sca["expiresAt"]}, someone_elses):
        response = submit(api, custodian_auth, payments, challenge, totp(custodian_user))
        assert response.status_code == 400, response.json()
        assert response.json()["errors"][0]["field"] == "scaChallenge"
    assert not Batch.objects.exists()


def test_payments_changed_after_initiate_are_refused(
    api, custodian_auth, custodian_user, payments, custodian_accounts
):
    sca = initiate(api, custodian_auth, payments)
    changed = [*payments[:1], payment(custodian_accounts[1], "5000.00"), payments[2]]

    for body_payments in (changed, payments[:2], [*payments, payments[0]]):
        response = submit(api, custodian_auth, body_payments, sca, totp(custodian_user))
        assert response.status_code == 400
        assert response.json()["errors"][0]["field"] == "scaChallenge"
    assert not Batch.objects.exists()


def test_a_retry_with_the_same_key_answers_the_first_answer(api, custodian_auth, custodian_user, payments):
    sca = initiate(api, custodian_auth, payments)
    first = submit(api, custodian_auth, payments, sca, totp(custodian_user), idempotencyKey=KEY)
    assert first.status_code == 200

    # The confirmation is spent and the challenge used: the key answers before both are checked.
    retry = submit(api, custodian_auth, payments, sca, wrong_totp(custodian_user), idempotencyKey=KEY)

    assert retry.status_code == 200
    assert retry["Idempotent-Replayed"] == "true"
    assert retry.content == first.content
    assert Batch.objects.count() == 1
    garbage = api.post(URL, {"action": "submit", "idempotencyKey": KEY}, format="json", **custodian_auth)
    assert garbage.status_code == 200 and garbage.content == first.content


def test_a_refused_submit_does_not_keep_its_key(api, custodian_auth, custodian_user, payments):
    sca = initiate(api, custodian_auth, payments)
    refused = submit(api, custodian_auth, payments, sca, wrong_totp(custodian_user), idempotencyKey=KEY)
    assert refused.status_code == 401
    assert not IdempotencyRecord.objects.exists()
    assert (
        submit(api, custodian_auth, payments, sca, totp(custodian_user), idempotencyKey=KEY).status_code
        == 200
    )


def test_keys_are_the_callers_own(
    api, custodian_auth, custodian_user, payments, customer, customer_auth, customer_account
):
    sca = initiate(api, custodian_auth, payments)
    first = submit(api, custodian_auth, payments, sca, totp(custodian_user), idempotencyKey=KEY)
    own = [payment(customer_account, "1.00")]
    other = submit(
        api, customer_auth, own, initiate(api, customer_auth, own), totp(customer.user), idempotencyKey=KEY
    )
    assert other.status_code == 200
    assert other.json()["data"]["batchId"] != first.json()["data"]["batchId"]


def test_pin_where_the_program_offers_it(api, business):
    step_up_pin_set(user=business.user, pin="2468")
    auth = business.access
    own = [payment(funded_account(business.customer, "100.00", **uk_account()), "3.00")]
    sca = initiate(api, auth, own)

    wrong = submit(api, auth, own, sca, {"method": "pin", "pin": "0000"})
    assert wrong.status_code == 401 and wrong.json()["code"] == "INVALID_CREDENTIALS"
    response = submit(api, auth, own, sca, {"method": "pin", "pin": "2468"})
    assert response.status_code == 200, response.json()
    assert response.json()["data"]["counts"] == {"total": 1, "valid": 1, "invalid": 0}


def test_pin_where_the_program_does_not_offer_it_is_a_422(api, custodian_auth, payments):
    sca = initiate(api, custodian_auth, payments)
    response = submit(api, custodian_auth, payments, sca, {"method": "pin", "pin": "1234"})
    assert response.status_code == 422
    assert response.json()["code"] == "NOT_SUPPORTED"
    assert not Batch.objects.exists()


def test_passkey_confirmation(api, custodian_auth, custodian_user, payments):
    authenticator = enrol_passkey(api, custodian_user.email, custodian_user.program_id)
    sca = initiate(api, custodian_auth, payments)

    challenge = api.post(
        URL, {"action": "passkey-challenge", "scaChallenge": sca}, format="json", **custodian_auth
    )

    assert challenge.status_code == 200, challenge.json()
    session = challenge.json()["data"]
    assert set(session) == {"passkeySession", "fido2options"}
    assert session["fido2options"]["allowCredentials"] == [
        {"type": "public-key", "id": authenticator.credential_id_b64}
    ]
    assertion = authenticator.get(session["fido2options"])
    confirmation = {"method": "passkey", "passkeySession": session["passkeySession"], "assertion": assertion}
    response = submit(api, custodian_auth, payments, sca, confirmation)
    assert response.status_code == 200, response.json()

    # The same assertion, replayed on a new challenge's session, is refused.
    sca2 = initiate(api, custodian_auth, payments)
    replay = submit(api, custodian_auth, payments, sca2, confirmation)
    assert replay.status_code == 401 and replay.json()["code"] == "INVALID_CREDENTIALS"
    # A session of another challenge does not confirm this one either.
    other = api.post(
        URL, {"action": "passkey-challenge", "scaChallenge": sca2}, format="json", **custodian_auth
    ).json()["data"]
    sca3 = initiate(api, custodian_auth, payments)
    crossed = {
        "method": "passkey",
        "passkeySession": other["passkeySession"],
        "assertion": authenticator.get(other["fido2options"]),
    }
    assert submit(api, custodian_auth, payments, sca3, crossed).status_code == 401
    assert Batch.objects.count() == 1


def test_a_passkey_challenge_without_a_passkey_is_a_422(api, custodian_auth, payments):
    sca = initiate(api, custodian_auth, payments)
    response = api.post(
        URL, {"action": "passkey-challenge", "scaChallenge": sca}, format="json", **custodian_auth
    )
    assert response.status_code == 422
    assert response.json()["code"] == "NOT_SUPPORTED"


def test_a_passkey_challenge_needs_a_live_challenge(api, custodian_auth):
    response = api.post(
        URL,
        {"action": "passkey-challenge", "scaChallenge": {"id": "x", "expiresAt": "x"}},
        format="json",
        **custodian_auth,
    )
    assert response.status_code == 400
    assert api.post(URL, {"action": "passkey-challenge"}, format="json", **custodian_auth).status_code == 400


def test_submitting_a_draft_gives_the_batch_the_drafts_id(api, custodian_auth, custodian_user, payments):
    draft_id = verify(api, custodian_auth, payments)
    sca = initiate(api, custodian_auth, payments, batchId=draft_id)

    # The challenge is bound to the draft: the same payments without it are refused.
    assert submit(api, custodian_auth, payments, sca, totp(custodian_user)).status_code == 400
    response = submit(api, custodian_auth, payments, sca, totp(custodian_user), batchId=draft_id)

    assert response.status_code == 200, response.json()
    assert response.json()["data"]["batchId"] == draft_id
    assert api.get(f"{URL}?drafts=true", **custodian_auth).json()["data"]["paymentsBatches"] == []
    detail = api.get(f"{URL}/{draft_id}", **custodian_auth).json()["data"]
    assert "draft" not in detail and len(detail["paymentsBatchItems"]) == 3
    assert Draft.objects.get(id=draft_id).submitted_at is not None


def test_an_expired_draft_cannot_be_submitted(api, custodian_auth, custodian_user, payments):
    draft_id = verify(api, custodian_auth, payments)
    sca = initiate(api, custodian_auth, payments, batchId=draft_id)
    Draft.objects.filter(id=draft_id).update(expires_at=timezone.now() - timedelta(seconds=1))

    response = submit(api, custodian_auth, payments, sca, totp(custodian_user), batchId=draft_id)

    assert response.status_code == 422
    assert response.json()["code"] == "DRAFT_EXPIRED"
    assert not Batch.objects.exists()


@pytest.mark.parametrize(
    "change",
    [
        {"confirmation": None},
        {"confirmation": {"method": "totp"}},
        {"confirmation": {"method": "totp", "code": "123456", "extra": 1}},
        {"confirmation": {"method": "sms", "code": "123456"}},
        {"scaChallenge": {"id": "x"}},
        {"scaChallenge": {"id": "x", "expiresAt": "y", "more": 1}},
        {"idempotencyKey": "not-a-uuid"},
        {"batchId": 12},
    ],
)
def test_submit_bad_input_is_a_400(api, custodian_auth, custodian_user, payments, change):
    sca = initiate(api, custodian_auth, payments)
    body = {
        "action": "submit",
        "payments": payments,
        "scaChallenge": sca,
        "confirmation": totp(custodian_user),
        **change,
    }
    body = {key: value for key, value in body.items() if value is not None}
    response = api.post(URL, body, format="json", **custodian_auth)
    assert response.status_code == 400, response.json()
    assert not Batch.objects.exists()


def test_the_single_customer_route_submits_from_its_own_accounts(api, customer, customer_account):
    auth = customer.access
    url = f"/v1/customers/{customer.customer.id}/batch-payments"
    own = [payment(customer_account, "2.00")]

    response = submit(api, auth, own, initiate(api, auth, own, url=url), totp(customer.user), url=url)

    assert response.status_code == 200, response.json()
    batch_id = response.json()["data"]["batchId"]
    listed = api.get(url, **auth).json()["data"]["paymentsBatches"]
    assert [entry["id"] for entry in listed] == [batch_id]
    assert listed[0]["customerId"] == str(customer.customer.id)
    assert api.get(f"{url}/{batch_id}", **auth).json()["data"]["status"] == "COMPLETED"


def test_a_challenge_confirms_only_on_the_route_it_was_made(
    api, custodian_auth, custodian_user, custodian_accounts
):
    first = custodian_accounts[0]
    own = [payment(first, "1.00")]
    single = f"/v1/customers/{first['customerId']}/batch-payments"
    sca = initiate(api, custodian_auth, own)

    response = submit(api, custodian_auth, own, sca, totp(custodian_user), url=single)

    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "scaChallenge"
    assert submit(api, custodian_auth, own, sca, totp(custodian_user)).status_code == 200
