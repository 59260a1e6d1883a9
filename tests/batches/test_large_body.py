"""A batch body over Django's own in-memory limit (2.5 MB by default) but within
the route's (16 MiB) is read and answered, never refused by Django as too large
after the route took it (that was a 500): with its length, and chunked."""

import io
import json

from django.conf import settings
from django.test import Client

from batches.models import Draft
from batches.views import MAX_BODY_BYTES
from tests.batches.conftest import PAYEE_IBAN, URL, payment

COUNT = 10_000


def large_batch(accounts) -> bytes:
    """10,000 payments to IBAN payees, as a client's JSON library writes them."""
    payments = [
        payment(accounts[index % len(accounts)], "1.00", f"Invoice number {index:05d}", PAYEE_IBAN)
        for index in range(COUNT)
    ]
    body = json.dumps({"action": "verify", "payments": payments}).encode()
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE < len(body) < MAX_BODY_BYTES, len(body)
    return body


def verified(answer) -> Draft:
    assert answer.status_code == 200, answer.content[:500]
    draft = Draft.objects.get(id=answer.json()["requestId"])
    assert len(draft.valid_payments) == COUNT and not draft.invalid_payments
    return draft


def test_a_batch_over_djangos_limit_but_within_the_routes_is_verified(
    custodian_auth, custodian_accounts, django_capture_on_commit_callbacks
):
    # Django's test client builds the WSGI request a server would (the body read
    # through Django, as gunicorn's is), unlike DRF's test client.
    with django_capture_on_commit_callbacks(execute=True):
        answer = Client(**custodian_auth).post(
            URL, large_batch(custodian_accounts), content_type="application/json"
        )
    assert "Invoice number 00000" in json.dumps(verified(answer).valid_payments[0])


def test_a_chunked_batch_over_djangos_limit_is_verified(
    custodian_auth, custodian_accounts, django_capture_on_commit_callbacks
):
    body = large_batch(custodian_accounts)
    with django_capture_on_commit_callbacks(execute=True):
        answer = Client().request(
            **{
                "HTTP_TRANSFER_ENCODING": "chunked",
                "wsgi.input": io.BytesIO(body),
                "wsgi.input_terminated": True,
                "CONTENT_TYPE": "application/json",
                "REQUEST_METHOD": "POST",
                "PATH_INFO": URL,
                **custodian_auth,
            }
        )
    verified(answer)
