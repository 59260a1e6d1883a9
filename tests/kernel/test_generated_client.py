"""A client generated from the live document (openapi-python-client, unmodified)
runs the README's whole flow against a live server, with no hand-written HTTP:
sign-in, payment, sandbox settle, statements in every format, FX quote, batch
verify, initiate and submit, its pain.002, a pain.001 upload, onboarding
(application, legal acceptance, presign, upload, download) and events, from a
client generated with no configuration.

Any drift between what the service answers and what the document says makes the
generated client raise or parse into the wrong type, which fails this test."""

import importlib
import inspect
import json
import shutil
import subprocess
import sys
import time
import typing
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest

from bench.pain001 import Instruction, Tx, pain001, scan
from onboarding.models import DocumentUpload
from payments.models import PaymentRequest
from tests.support.factories import PASSWORD, SignedIn
from tests.support.factories_kernel import world_make
from tests.support.openapi import openapi_document

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PDF = b"%PDF-1.4 sandbox passport scan\n"

pytestmark = pytest.mark.skipif(
    not GENERATOR.exists() and shutil.which("openapi-python-client") is None,
    reason="openapi-python-client is not installed (requirements.txt's test part)",
)


@pytest.fixture
def bank(tmp_path, monkeypatch):
    """The generated package `bank_api_client`, importable for this test."""
    document = tmp_path / "openapi.json"
    document.write_text(json.dumps(openapi_document()))
    # No configuration: the document alone must make files (statements, reports,
    # pain.001 uploads) bytes the generated code reads and sends as they are.
    generator = str(GENERATOR) if GENERATOR.exists() else "openapi-python-client"
    result = subprocess.run(
        [
            generator,
            "generate",
            "--path",
            str(document),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / "bank_api_client"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # Every operation is generated: the generator warns about any it had to skip.
    assert "Endpoint will not be generated" not in result.stdout + result.stderr
    assert "response will be omitted" not in result.stdout + result.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name.startswith("bank_api_client")]:
        del sys.modules[name]
    return importlib.import_module("bank_api_client")


def api(name: str):
    """A generated operation module, e.g. api("auth.auth_login_create")."""
    return importlib.import_module(f"bank_api_client.api.{name}")


def signed_in(bank, base_url: str, program: str, person: SignedIn):
    """(AuthenticatedClient, the tokens, the TOTP) after login and verify-2fa."""
    from bank_api_client import AuthenticatedClient, Client
    from bank_api_client.models import LoginInputRequest, Verify2FaInputRequest

    plain = Client(base_url=base_url, raise_on_unexpected_status=True)
    challenge = api("auth.auth_login_create").sync(
        client=plain,
        body=LoginInputRequest(email=person.email, password=PASSWORD),
        x_program_id=program,
    )
    assert challenge.data.challenge == "SOFTWARE_TOKEN_MFA"
    totp = pyotp.TOTP(person.user.totp_secret)
    tokens = api("auth.auth_verify_2fa_create").sync(
        client=plain,
        body=Verify2FaInputRequest(session_token=challenge.data.session_token, totp_code=totp.now()),
        x_program_id=program,
    )
    return (
        AuthenticatedClient(
            base_url=base_url, token=tokens.data.access_token, raise_on_unexpected_status=True
        ),
        tokens.data,
        totp,
    )


def test_the_generated_client_runs_the_readme_flow(
    bank, transactional_db, live_server, fx_rates, settings, tmp_path
):
    from bank_api_client import AuthenticatedClient, Client
    from bank_api_client import models as fx_models
    from bank_api_client.models import (
        ApplicationCreateRequest,
        BatchActionRequest,
        LegalAcceptRequest,
        PaymentCreateRequest,
        PresignRequest,
        ScaChallengeRequest,
        TotpConfirmationMethodEnum,
        TotpConfirmationRequest,
    )
    from bank_api_client.types import File

    settings.AWS_STORAGE_BUCKET_NAME = None
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": tmp_path / "media"},
        },
    }
    world = world_make()
    url, program = live_server.url, str(world.consumer.id)

    # Public routes on the plain client.
    plain = Client(base_url=url, raise_on_unexpected_status=True)
    assert api("service.healthz_retrieve").sync_detailed(client=plain).status_code == 200

    # Sign in, then pay 25.00 to the saved beneficiary and settle it.
    client, _, _ = signed_in(bank, url, program, world.customer)
    capabilities = api("accounts.capabilities_retrieve").sync(client=client)
    assert capabilities.success is True
    payment = api("payments.customers_accounts_payments_create").sync(
        str(world.account.customer_id),
        str(world.account.id),
        client=client,
        body=PaymentCreateRequest(
            amount="25.00", reference="Invoice 42", beneficiary_id=str(world.beneficiary.id)
        ),
        idempotency_key=str(uuid.uuid4()),
    )
    request_id = payment.data.bank_transfer.request_id
    settled = api("sandbox.sandbox_payment_requests_settle_create").sync(str(request_id), client=client)
    assert settled.data.payment_request.status == "SETTLED"
    assert PaymentRequest.objects.get(id=request_id).status == "SETTLED"

    # The account's statement in its three formats, each body bytes as served.
    statement = api("payments.customers_accounts_statements_retrieve")
    day = str(datetime.now(UTC).date())
    bodies = {
        format_: statement.sync(
            str(world.account.customer_id),
            str(world.account.id),
            client=client,
            from_=day,
            to=day,
            format_=fx_models.CustomersAccountsStatementsRetrieveFormat(format_),
        ).payload.read()
        for format_ in ("json", "csv", "camt053")
    }
    entries = json.loads(bodies["json"])["data"]["entries"]
    assert [e["endToEndId"] for e in entries if e["requestId"] == str(request_id)] == [request_id.hex]
    assert bodies["csv"].decode().splitlines()[0].endswith(",endToEndId")
    assert f"<TxId>{request_id.hex}</TxId>".encode() in bodies["camt053"]

    # Operations a session token may call take the plain client too.
    for name in (
        "auth.auth_change_password_create",
        "auth.auth_mfa_setup_create",
        "auth.auth_passkey_register_start_create",
        "auth.auth_passkey_register_complete_create",
    ):
        taken = inspect.signature(api(name).sync_detailed).parameters["client"].annotation
        assert Client in typing.get_args(taken), name

    # An FX quote.
    quote = api("fx.accounts_fx_quote_retrieve").sync(
        str(world.account.id),
        client=client,
        amount="100.00",
        # ISO 4217 codes are an enum in the document, so the client takes its members.
        amount_currency=fx_models.AccountsFxQuoteRetrieveAmountCurrency("GBP"),
        currency_one=fx_models.AccountsFxQuoteRetrieveCurrencyOne("GBP"),
        currency_two=fx_models.AccountsFxQuoteRetrieveCurrencyTwo("EUR"),
    )
    assert quote.data.quote_id and quote.data.currency_two == "EUR"

    # Batch: verify, initiate, submit with the next TOTP code (the sign-in one is spent).
    custodian_client, _, custodian_totp = signed_in(bank, url, program, world.custodian.person)
    payer = world.custodian.accounts[0]
    payments = [
        {
            "payer": {
                "account": {
                    "type": "uk",
                    "sortCode": payer.sort_code,
                    "accountNumber": payer.account_number,
                }
            },
            "payee": {
                "name": "Jane Supplier",
                "account": {"type": "uk", "sortCode": "200000", "accountNumber": "55779911"},
            },
            "reference": "Invoice 7",
            "amount": "12.50",
        }
    ]
    action = api("batch_payments.batch_payments_action")
    verified = action.sync(
        client=custodian_client, body=BatchActionRequest.from_dict({"action": "verify", "payments": payments})
    )
    draft = verified.request_id
    initiated = action.sync(
        client=custodian_client,
        body=BatchActionRequest.from_dict({"action": "initiate", "batchId": draft, "payments": payments}),
    )
    challenge = initiated.data.sca_challenge
    # The challenge goes back as initiate answered it, through the generated models.
    submit = BatchActionRequest.from_dict({"action": "submit", "batchId": draft, "payments": payments})
    submit.sca_challenge = ScaChallengeRequest(id=str(challenge.id), expires_at=challenge.expires_at)
    submit.confirmation = TotpConfirmationRequest(
        method=TotpConfirmationMethodEnum.TOTP, code=custodian_totp.at(time.time() + 30)
    )
    submit.idempotency_key = uuid.uuid4()
    submitted = action.sync(client=custodian_client, body=submit)
    assert str(submitted.data.batch_id) == draft
    # Its pain.002, and a pain.001 file uploaded as bytes: a draft, reported in turn.
    report = api("batch_payments.batch_payments_status_report")
    paid = report.sync(draft, client=custodian_client).payload.read()
    assert b"<GrpSts>ACSC</GrpSts>" in paid
    document = pain001(
        [
            Instruction(
                scan(payer.sort_code, payer.account_number), [Tx("E2E-1", "3.00", scan("200000", "55779911"))]
            )
        ],
        msg_id="GENERATED-CLIENT-1",
    )
    uploaded = api("batch_payments.batch_payments_file_upload").sync(
        client=custodian_client, body=File(payload=document)
    )
    assert uploaded.status == "DRAFT"
    assert (
        b"<OrgnlMsgId>GENERATED-CLIENT-1</OrgnlMsgId>"
        in report.sync(str(uploaded.request_id), client=custodian_client).payload.read()
    )

    # Onboarding with the id_token: application, legal acceptance, presign, upload, download.
    person = world.customer2
    _, tokens, _ = signed_in(bank, url, program, person)
    onboarding = AuthenticatedClient(base_url=url, token=tokens.id_token, raise_on_unexpected_status=True)
    application = api("onboarding.applications_create").sync(
        client=onboarding, body=ApplicationCreateRequest(is_company=False), idempotency_key=str(uuid.uuid4())
    )
    application_id = str(application.data.application.application_id)
    legal = (
        api("onboarding.applications_documents_legal_retrieve")
        .sync(application_id, client=onboarding)
        .data.documents
    )
    # Read one where its location says (…/documents/legal/{documentId}/content).
    document_id = legal.docs[0].location.rstrip("/").split("/")[-2]
    content = api("onboarding.applications_documents_legal_content_retrieve").sync_detailed(
        application_id, document_id, client=onboarding
    )
    assert content.status_code == 200 and content.content
    accepted = api("onboarding.applications_documents_legal_accept_create").sync(
        application_id,
        client=onboarding,
        body=LegalAcceptRequest.from_dict(
            {
                "documentSetVersion": legal.document_set_version,
                "acceptedDocuments": [
                    {"id": d.id, "hash": d.hash_, "version": d.version} for d in legal.docs
                ],
            }
        ),
    )
    assert accepted.success is True
    presign = api("onboarding.customers_documents_presign_create")
    upload = presign.sync(
        str(person.customer.id),
        client=onboarding,
        body=PresignRequest.from_dict(
            {
                "collection": "kyc",
                "documentType": "PASSPORT",
                "contentType": "application/pdf",
                "applicationId": application_id,
            }
        ),
    ).data
    signed = {name: values[0] for name, values in parse_qs(urlsplit(upload.upload_url).query).items()}
    put = api("onboarding.documents_local_update").sync_detailed(
        client=plain, body=File(payload=PDF, mime_type="application/pdf"), **signed
    )
    assert put.status_code == 200
    assert DocumentUpload.objects.get(key=upload.key).application_id == uuid.UUID(application_id)
    download = presign.sync(
        str(person.customer.id),
        client=onboarding,
        body=PresignRequest.from_dict(
            {"collection": "kyc", "key": upload.key, "applicationId": application_id}
        ),
    ).data
    signed = {name: values[0] for name, values in parse_qs(urlsplit(download.download_url).query).items()}
    got = api("onboarding.documents_local_retrieve").sync(client=plain, **signed)
    assert got.payload.read() == PDF

    # Events: the customer's payment, settled.
    events = api("events.events_retrieve").sync(client=client)
    assert "payment_request.settled" in {event.type_ for event in events.data.events}
