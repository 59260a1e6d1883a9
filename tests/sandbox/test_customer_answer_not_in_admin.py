"""The answer of POST /v1/sandbox/customers that a replay repeats holds the new
user's password, TOTP secret and PIN: it is stored encrypted, and no back-office
page shows any of them, not even to a superuser walking every list and record."""

import re
import uuid

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db import connection

from authn.models import User
from bankapi.models import IdempotencyRecord
from tests.sandbox.helpers import management


def _secrets_in(text: str, secrets: dict[str, str]) -> list[str]:
    """Which secrets the text holds; the PIN (six digits) only where it stands
    alone, so a CSRF token or an id that happens to hold its digits is no match."""
    found = [name for name in ("password", "totpSecret") if secrets[name] in text]
    if re.search(rf"(?<![0-9A-Za-z]){re.escape(secrets['pin'])}(?![0-9A-Za-z])", text):
        found.append("pin")
    return found


def _every_admin_page(client) -> dict[str, str]:
    """Each registered model's changelist and the record page of every row it lists."""
    pages: dict[str, str] = {}
    for model in admin.site._registry:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        listing = client.get(url)
        assert listing.status_code == 200, url
        pages[url] = listing.content.decode()
        for row in listing.context["cl"].result_list:
            page_url = f"{url}{quote(row.pk)}/change/"
            page = client.get(page_url)
            assert page.status_code == 200, page_url
            pages[page_url] = page.content.decode()
    return pages


def test_the_replayed_secrets_are_sealed_at_rest_and_on_no_admin_page(api, sandbox, client):
    program = sandbox["businessProgramId"]
    key = str(uuid.uuid4())
    url = f"/v1/sandbox/customers?programId={program}"
    headers = {"HTTP_IDEMPOTENCY_KEY": key, **management(sandbox)}
    made = api.post(url, {"name": "Secret Keeper"}, format="json", **headers)
    again = api.post(url, {"name": "Secret Keeper"}, format="json", **headers)
    assert made.status_code == again.status_code == 200 and again.content == made.content
    data = made.json()["data"]
    secrets = {name: data[name] for name in ("password", "totpSecret", "pin")}
    assert all(secrets.values()) and len(secrets["pin"]) == 6

    record = IdempotencyRecord.objects.get(key=key)
    with connection.cursor() as cursor:
        table = IdempotencyRecord._meta.db_table
        cursor.execute(f"SELECT response_body FROM {table} WHERE id = %s", [record.pk])
        (raw,) = cursor.fetchone()
    stored = bytes(raw).decode("latin-1")
    assert stored and _secrets_in(stored, secrets) == []
    assert data["customerId"] not in stored  # the whole answer is sealed, not only the secrets

    client.force_login(User.objects.create_superuser("root@backoffice.example", "Root-Password-4242"))
    pages = _every_admin_page(client)
    record_page = f"/admin/bankapi/idempotencyrecord/{record.pk}/change/"
    assert record_page in pages and "encrypted" in pages[record_page]
    assert f"/admin/bankapi/customer/{data['customerId']}/change/" in pages
    shown = {url: _secrets_in(html, secrets) for url, html in pages.items()}
    assert {url: found for url, found in shown.items() if found} == {}
