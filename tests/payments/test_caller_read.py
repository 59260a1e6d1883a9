"""A payment reads its caller, account and beneficiary in one query: every rule the
separate reads applied still answers the same way."""

import uuid

from django.db.models import F

from authn.models import User
from bankapi.models import Account
from payments.models import PaymentRequest
from tests.payments.conftest import payments_url


def _body(beneficiary) -> dict:
    return {
        "amount": "10.00",
        "reference": "Invoice 42",
        "beneficiaryId": str(beneficiary.id),
    }


def _pay(api, auth, account, body):
    return api.post(
        payments_url(account.customer_id, account.id),
        body,
        format="json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def _pay_raw(api, auth, account, raw: str):
    return api.post(
        payments_url(account.customer_id, account.id),
        raw,
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()),
        **auth,
    )


def test_a_deactivated_or_signed_out_user_is_refused_with_401(
    api, customer_auth, account, snapshot, beneficiary, payer
):
    user = User.objects.filter(email=payer.email, program_id=account.program_id)
    before = snapshot()

    user.update(is_active=False)
    inactive = _pay(api, customer_auth, account, _body(beneficiary))
    user.update(is_active=True, token_version=F("token_version") + 1)
    revoked = _pay(api, customer_auth, account, _body(beneficiary))

    assert (inactive.status_code, inactive.json()["code"]) == (401, "UNAUTHORIZED")
    assert (revoked.status_code, revoked.json()["message"]) == (401, "Token has been revoked")
    assert before.unchanged()


def test_an_account_of_the_customer_in_another_environment_is_not_found(
    api, sandbox, customer_auth, account, snapshot, beneficiary
):
    Account.objects.filter(id=account.id).update(sandbox=not account.sandbox)
    before = snapshot()

    response = _pay(api, customer_auth, account, _body(beneficiary))

    assert (response.status_code, response.json()["code"]) == (404, "RESOURCE_NOT_FOUND")
    assert before.unchanged()


def test_a_beneficiary_the_raw_body_hides_is_still_the_one_paid(api, customer_auth, account, beneficiary):
    # "beneficiaryId" spelled with a JSON escape: the body means the same, and
    # the parsed body names the beneficiary read with the caller.
    raw = f'{{"amount": "10.00", "reference": "Invoice 42", "\\u0062eneficiaryId": "{str(beneficiary.id)}"}}'

    response = _pay_raw(api, customer_auth, account, raw)

    assert response.status_code == 200, response.json()
    request = PaymentRequest.objects.get(id=response.json()["data"]["bankTransfer"]["requestId"])
    assert str(request.beneficiary_id) == str(beneficiary.id)


def test_a_body_naming_two_beneficiaries_pays_neither(api, customer_auth, account, snapshot, beneficiary):
    # A key twice does not parse: nothing is read with the caller, the body is refused.
    raw = (
        f'{{"beneficiaryId": "{str(beneficiary.id)}", "amount": "10.00", '
        f'"reference": "Invoice 42", "beneficiaryId": "{uuid.uuid4()}"}}'
    )
    before = snapshot()

    response = _pay_raw(api, customer_auth, account, raw)

    assert response.status_code == 400
    assert before.unchanged()
