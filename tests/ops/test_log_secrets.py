"""No log line carries a secret: a full flow at DEBUG, SQL with its parameters
included, captured as the console handler writes it."""

import re
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest

from authn.models import User
from cards.models import Card
from tests.authn.helpers import auth_post, challenge_of, login, tokens_of
from tests.batches.conftest import URL as BATCHES
from tests.batches.conftest import payment
from tests.onboarding.conftest import local_storage  # noqa: F401 - a fixture
from tests.onboarding.test_presign import PDF, local, presign_url
from tests.payments.conftest import payments_url
from tests.support.auth import access_header, id_header
from tests.support.receiver import start_receiver


@pytest.fixture
def receiver():
    receiver, server = start_receiver()
    yield receiver
    server.shutdown()
    server.server_close()


def fresh_code(user_email: str, program_id: str) -> str:
    """A TOTP code the user has not spent (a code is good once per 30-second step)."""
    user = User.objects.get(email=user_email, program_id=program_id)
    User.objects.filter(id=user.id).update(totp_last_step=0)
    return pyotp.TOTP(user.totp_secret).now()


def secure_url(holder: dict) -> str:
    account = f"/v1/customers/{holder['customerId']}/accounts/{holder['accountId']}"
    return f"{account}/cards/{holder['cardId']}/secure"


def signature_of(url: str) -> str:
    query = parse_qs(urlsplit(url).query)
    found = [values[0] for name, values in query.items() if "signature" in name.lower()]
    assert found, url
    return found[0]


def test_a_full_flow_at_debug_level_logs_no_secret(
    api, sandbox, console, receiver, django_capture_on_commit_callbacks
):
    program = sandbox["consumerProgramId"]
    customer, custodian, business = sandbox["customer"], sandbox["custodian"], sandbox["business"]
    management = id_header(sandbox["management"]["email"], None)
    custodian_auth = access_header(custodian["email"], program)
    long_secrets = [
        customer["password"],
        customer["totpSecret"],
        custodian["password"],
        User.objects.get(email=custodian["email"], program_id=program).totp_secret,
    ]
    short_secrets = [business["pin"]]
    long_secrets += [
        management["HTTP_AUTHORIZATION"].split()[1],
        custodian_auth["HTTP_AUTHORIZATION"].split()[1],
    ]

    with django_capture_on_commit_callbacks(execute=True):
        # A webhook endpoint, its secret answered once.
        created = api.post(
            f"/v1/webhook-endpoints?programId={program}",
            {"url": receiver.url, "eventTypes": ["payment_request.accepted"]},
            format="json",
            **management,
        )
        assert created.status_code == 200, created.json()
        secret = created.json()["data"]["secret"]
        long_secrets += [secret, secret.removeprefix("whsec_")]

        # Sign-in with a password and a TOTP code.
        code = fresh_code(customer["email"], program)
        session = challenge_of(
            login(api, customer["email"], customer["password"], program), "SOFTWARE_TOKEN_MFA"
        )
        signed_in = tokens_of(
            auth_post(api, "verify-2fa", {"session_token": session, "totp_code": code}, program=program)
        )
        short_secrets.append(code)
        long_secrets += [
            session,
            signed_in["access_token"],
            signed_in["id_token"],
            signed_in["refresh_token"],
        ]
        auth = {"HTTP_AUTHORIZATION": f"Bearer {signed_in['access_token']}"}
        id_auth = {"HTTP_AUTHORIZATION": f"Bearer {signed_in['id_token']}"}

        # A payment, delivered to the endpoint.
        paid = api.post(
            payments_url(customer["customerId"], customer["accountId"]),
            {"amount": "4.00", "reference": "Logged", "beneficiaryId": customer["beneficiaryId"]},
            format="json",
            **auth,
        )
        assert paid.status_code == 200, paid.json()

    assert len(receiver.received) == 1

    # The card's secure details, after a TOTP step-up and after a PIN.
    code = fresh_code(customer["email"], program)
    short_secrets.append(code)
    revealed = api.post(
        secure_url(customer), {"confirmation": {"method": "totp", "code": code}}, format="json", **auth
    )
    assert revealed.status_code == 200, revealed.json()
    card = Card.objects.get(id=customer["cardId"])
    long_secrets.append(card.pan)
    short_secrets.append(card.cvv)
    business_auth = access_header(business["email"], sandbox["businessProgramId"])
    long_secrets.append(business_auth["HTTP_AUTHORIZATION"].split()[1])
    by_pin = api.post(
        secure_url(business),
        {"confirmation": {"method": "pin", "pin": business["pin"]}},
        format="json",
        **business_auth,
    )
    assert by_pin.status_code == 200, by_pin.json()
    business_card = Card.objects.get(id=business["cardId"])
    long_secrets.append(business_card.pan)
    short_secrets.append(business_card.cvv)

    # A batch, initiated and submitted with a TOTP code, then paid.
    payments = [payment(account, "2.00") for account in custodian["accounts"]]
    with django_capture_on_commit_callbacks(execute=True):
        sca = api.post(BATCHES, {"action": "initiate", "payments": payments}, format="json", **custodian_auth)
        assert sca.status_code == 200, sca.json()
        code = fresh_code(custodian["email"], program)
        short_secrets.append(code)
        submitted = api.post(
            BATCHES,
            {
                "action": "submit",
                "payments": payments,
                "scaChallenge": sca.json()["data"]["scaChallenge"],
                "confirmation": {"method": "totp", "code": code},
            },
            format="json",
            **custodian_auth,
        )
        assert submitted.status_code == 200, submitted.json()

    # A document: presigned, uploaded, presigned for download, downloaded.
    body = {"collection": "kyc", "documentType": "PASSPORT", "contentType": "application/pdf"}
    issued = api.post(presign_url(customer["customerId"]), body, format="json", **id_auth).json()["data"]
    assert (
        api.generic("PUT", local(issued["uploadUrl"]), PDF, content_type="application/pdf").status_code == 200
    )
    got = api.post(
        presign_url(customer["customerId"]),
        {"applicationId": customer["applicationId"], "collection": "kyc", "key": issued["key"]},
        format="json",
        **id_auth,
    ).json()["data"]
    downloaded = api.get(local(got["downloadUrl"]))
    assert downloaded.status_code == 200
    long_secrets += [signature_of(issued["uploadUrl"]), signature_of(got["downloadUrl"])]

    written = console.text()
    # The capture saw the flow (SQL included), so an empty log cannot pass.
    assert "SELECT" in written and "INSERT" in written and written.count("\n") > 100
    leaked = [secret for secret in long_secrets if secret and secret in written]
    assert not leaked, f"secrets in the log: {leaked}"
    # Codes, CVVs and PINs are short digit strings: looked for as values (quoted,
    # or after = or :), not inside longer numbers or ids.
    short = [
        value
        for value in short_secrets
        if re.search(rf"(['\"=:]\s*){re.escape(value)}(?![0-9A-Za-z])", written)
    ]
    assert not short, f"codes in the log: {short}"
