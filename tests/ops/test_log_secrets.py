"""No log line carries a secret: a full flow at DEBUG, SQL with its parameters
included, captured as the console handler writes it."""

import re
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest

from authn.models import User
from authn.services.stepup import step_up_pin_set
from bankapi.models import Program
from cards.models import Card
from cards.services import card_issue
from tests.authn.helpers import auth_post, challenge_of, login, tokens_of
from tests.batches.conftest import URL as BATCHES
from tests.batches.conftest import payment
from tests.onboarding.conftest import local_storage  # noqa: F401 - a fixture
from tests.onboarding.test_presign import PDF, local, presign_url
from tests.payments.conftest import payments_url
from tests.support.factories import (
    PASSWORD,
    ProgramFactory,
    custodian_with_clients,
    customer_user,
    funded_account,
)
from tests.support.factories_onboarding import applicant_of
from tests.support.receiver import start_receiver

SQL_INTEGER = re.compile(r"=\s*\d+(?![\d.'A-Za-z])")


@pytest.fixture
def receiver():
    receiver, server = start_receiver()
    yield receiver
    server.shutdown()
    server.server_close()


def fresh_code(user: User) -> str:
    """A TOTP code the user has not spent (a code is good once per 30-second step)."""
    User.objects.filter(id=user.id).update(totp_last_step=0)
    return pyotp.TOTP(user.totp_secret).now()


def secure_url(card: Card) -> str:
    account = f"/v1/customers/{card.account.customer_id}/accounts/{card.account_id}"
    return f"{account}/cards/{card.id}/secure"


def signature_of(url: str) -> str:
    query = parse_qs(urlsplit(url).query)
    found = [values[0] for name, values in query.items() if "signature" in name.lower()]
    assert found, url
    return found[0]


def test_a_full_flow_at_debug_level_logs_no_secret(
    api,
    program,
    payer,
    account,
    beneficiary,
    management,
    console,
    receiver,
    django_capture_on_commit_callbacks,
):
    # The payer (password and TOTP) with a card on its account and an application;
    # a custodian of two clients; a customer of a business program that takes
    # step-up PINs, with a card and a PIN.
    program_id = str(program.id)
    card = card_issue(account=account, name_on_card="Test Payer")
    application = applicant_of(payer).application
    custodian = custodian_with_clients(program, clients=2)
    business = customer_user(
        ProgramFactory(account_type=Program.AccountType.BUSINESS, pin_confirmation_enabled=True)
    )
    business_card = card_issue(account=funded_account(business.customer, "0"), name_on_card="Test Business")
    business_pin = "482913"
    step_up_pin_set(user=business.user, pin=business_pin)
    management_auth = management.id
    custodian_auth = custodian.person.access
    long_secrets = [PASSWORD, payer.user.totp_secret, custodian.user.totp_secret]
    short_secrets = [business_pin]
    long_secrets += [
        management_auth["HTTP_AUTHORIZATION"].split()[1],
        custodian_auth["HTTP_AUTHORIZATION"].split()[1],
    ]

    with django_capture_on_commit_callbacks(execute=True):
        # A webhook endpoint, its secret answered once.
        created = api.post(
            f"/v1/webhook-endpoints?programId={program_id}",
            {"url": receiver.url, "eventTypes": ["payment_request.accepted"]},
            format="json",
            **management_auth,
        )
        assert created.status_code == 200, created.json()
        secret = created.json()["data"]["secret"]
        long_secrets += [secret, secret.removeprefix("whsec_")]

        # Sign-in with a password and a TOTP code.
        code = fresh_code(payer.user)
        session = challenge_of(login(api, payer.email, PASSWORD, program_id), "SOFTWARE_TOKEN_MFA")
        signed_in = tokens_of(
            auth_post(api, "verify-2fa", {"session_token": session, "totp_code": code}, program=program_id)
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
            payments_url(account.customer_id, account.id),
            {"amount": "4.00", "reference": "Logged", "beneficiaryId": str(beneficiary.id)},
            format="json",
            **auth,
        )
        assert paid.status_code == 200, paid.json()

    assert len(receiver.received) == 1

    # The card's secure details, after a TOTP step-up and after a PIN.
    code = fresh_code(payer.user)
    short_secrets.append(code)
    revealed = api.post(
        secure_url(card), {"confirmation": {"method": "totp", "code": code}}, format="json", **auth
    )
    assert revealed.status_code == 200, revealed.json()
    long_secrets.append(card.pan)
    short_secrets.append(card.cvv)
    business_auth = business.access
    long_secrets.append(business_auth["HTTP_AUTHORIZATION"].split()[1])
    by_pin = api.post(
        secure_url(business_card),
        {"confirmation": {"method": "pin", "pin": business_pin}},
        format="json",
        **business_auth,
    )
    assert by_pin.status_code == 200, by_pin.json()
    long_secrets.append(business_card.pan)
    short_secrets.append(business_card.cvv)

    # A batch, initiated and submitted with a TOTP code, then paid.
    payments = [payment(client_account, "2.00") for client_account in custodian.accounts]
    with django_capture_on_commit_callbacks(execute=True):
        sca = api.post(BATCHES, {"action": "initiate", "payments": payments}, format="json", **custodian_auth)
        assert sca.status_code == 200, sca.json()
        code = fresh_code(custodian.user)
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
    issued = api.post(presign_url(account.customer_id), body, format="json", **id_auth).json()["data"]
    assert (
        api.generic("PUT", local(issued["uploadUrl"]), PDF, content_type="application/pdf").status_code == 200
    )
    got = api.post(
        presign_url(account.customer_id),
        {"applicationId": str(application.id), "collection": "kyc", "key": issued["key"]},
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
    # or after = or :), not inside longer numbers or ids. They are strings, so SQL
    # would quote them; an unquoted integer in SQL is a key or a counter, and on
    # PostgreSQL sequences outlive each test's rollback, so `"id" = 714` may equal
    # a three-digit CVV by chance.
    searched = "\n".join(
        SQL_INTEGER.sub("= <integer>", line) if " django.db.backends " in line else line
        for line in written.splitlines()
    )
    short = [
        value
        for value in short_secrets
        # Not the start of an address or a decimal (`=127.0.0.1` holds a CVV of 127).
        if re.search(rf"(['\"=:]\s*){re.escape(value)}(?![0-9A-Za-z]|\.[0-9])", searched)
    ]
    assert not short, f"codes in the log: {short}"
