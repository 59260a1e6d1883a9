"""initiate: the total of the valid payments and an SCA challenge bound to them."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from batches.models import Draft, ScaChallenge
from batches.rules import payments_hash, sent_payment_from_wire
from tests.batches.conftest import URL, payment, verify

pytestmark = pytest.mark.django_db


def sent(payments: list[dict]) -> list:
    return [sent_payment_from_wire(p) for p in payments]


def initiate(api, auth, payments, **extra):
    return api.post(URL, {"action": "initiate", "payments": payments, **extra}, format="json", **auth)


def test_initiate_answers_the_total_of_the_valid_payments(
    api, custodian_auth, custodian_accounts, custodian_user
):
    payments = [
        payment(custodian_accounts[0], "10.10"),
        payment(custodian_accounts[1], "0.90"),
        payment(custodian_accounts[0], "x"),
    ]
    before = timezone.now()

    response = initiate(api, custodian_auth, payments)

    assert response.status_code == 200
    data = response.json()["data"]
    assert (data["totalAmount"], data["currency"]) == ("11.00", "GBP")
    challenge = ScaChallenge.objects.get(id=data["scaChallenge"]["id"])
    expires = datetime.fromisoformat(data["scaChallenge"]["expiresAt"])
    assert timedelta(minutes=4, seconds=59) <= expires - before <= timedelta(minutes=5, seconds=5)
    assert challenge.user == custodian_user
    assert challenge.payments_hash == payments_hash(sent(payments), None)


def test_initiate_with_no_valid_payment_is_a_400(api, custodian_auth, custodian_accounts):
    response = initiate(api, custodian_auth, [payment(custodian_accounts[0], "0")])
    assert response.status_code == 400
    assert not ScaChallenge.objects.exists()


def test_initiate_a_draft(api, custodian_auth, custodian_accounts):
    payments = [payment(custodian_accounts[0], "3.00")]
    draft_id = verify(api, custodian_auth, payments)

    response = initiate(api, custodian_auth, payments, batchId=draft_id)

    assert response.status_code == 200
    challenge = ScaChallenge.objects.get(id=response.json()["data"]["scaChallenge"]["id"])
    assert str(challenge.draft_id) == draft_id
    assert challenge.payments_hash == payments_hash(sent(payments), draft_id)


def test_initiate_a_draft_with_other_payments_is_a_400(api, custodian_auth, custodian_accounts):
    draft_id = verify(api, custodian_auth, [payment(custodian_accounts[0], "3.00")])
    response = initiate(api, custodian_auth, [payment(custodian_accounts[0], "4.00")], batchId=draft_id)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "payments"


def test_an_expired_draft_is_a_422(api, custodian_auth, custodian_accounts):
    payments = [payment(custodian_accounts[0])]
    draft_id = verify(api, custodian_auth, payments)
    Draft.objects.filter(id=draft_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = initiate(api, custodian_auth, payments, batchId=draft_id)
    assert response.status_code == 422
    assert response.json()["code"] == "DRAFT_EXPIRED"


def test_a_draft_still_verifying_is_a_409(
    api, plain_api, custodian_auth, custodian_accounts, django_capture_on_commit_callbacks
):
    payments = [payment(custodian_accounts[0])]
    with django_capture_on_commit_callbacks(execute=False):
        draft_id = verify(plain_api, custodian_auth, payments)
    response = initiate(api, custodian_auth, payments, batchId=draft_id)
    assert response.status_code == 409
    assert response.json()["code"] == "INVALID_STATE"


def test_an_unknown_or_foreign_draft_is_a_404(api, custodian_auth, customer_auth, custodian_accounts):
    payments = [payment(custodian_accounts[0])]
    draft_id = verify(api, custodian_auth, payments)
    for auth, batch_id in (
        (custodian_auth, "00000000-0000-0000-0000-000000000000"),
        (customer_auth, draft_id),
        (custodian_auth, "x"),
    ):
        response = initiate(api, auth, payments, batchId=batch_id)
        assert response.status_code == 404
        assert response.json()["code"] == "RESOURCE_NOT_FOUND"


def test_initiate_bad_input(api, custodian_auth):
    for body in ({"action": "initiate"}, {"action": "initiate", "payments": [{}], "batchId": 5}):
        response = api.post(URL, body, format="json", **custodian_auth)
        assert response.status_code == 400
    assert not ScaChallenge.objects.exists()
