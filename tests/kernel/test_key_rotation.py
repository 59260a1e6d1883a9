"""Rotating the field-encryption key without downtime: `rotate_field_key`
re-encrypts every encrypted column under the newest key while the old one still
reads; it resumes after a crash and a second run changes nothing."""

import io

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import call_command
from django.db import models
from django.db.models.functions import Cast
from django.test import override_settings

from authn.models import User
from bankapi.ops import key_rotation
from bankapi.ops.key_rotation import encrypted_models, stale_values_count
from cards.models import Card
from cards.services import card_issue
from events.models import WebhookEndpoint

TOTP_SEED = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
SECRET = "whsec_b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xk"
PREVIOUS = "whsec_cHJldnByZXZwcmV2cHJldnByZXZwcmV2"


@pytest.fixture
def secrets(program, account, payer, business) -> dict:
    """Real encrypted data of every kind: cards, TOTP seeds, webhook secrets."""
    cards = [card_issue(account=account, name_on_card=f"ROTATE {n}") for n in range(5)]
    users = [payer.user, business.user]
    for user in users:
        user.totp_secret = TOTP_SEED
        user.save(update_fields=["totp_secret"])
    endpoint = WebhookEndpoint.objects.create(
        program=program,
        url="https://hooks.example.com/rotate",
        event_types=["payment_request.settled"],
        secret=SECRET,
        previous_secret=PREVIOUS,
    )
    return {
        "cards": {card.id: (card.pan, card.cvv) for card in cards},
        "users": [user.id for user in users],
        "endpoint": endpoint.id,
    }


def _plaintexts() -> dict:
    return {
        "cards": {card.id: (card.pan, card.cvv) for card in Card.objects.all()},
        "totp": {user.id: user.totp_secret for user in User.objects.exclude(totp_secret="")},
        "webhooks": {e.id: (e.secret, e.previous_secret) for e in WebhookEndpoint.objects.all()},
    }


def _stored() -> dict:
    """Every encrypted column as stored (the ciphertext)."""
    stored = {}
    for target in encrypted_models():
        raw = {f"raw_{f.attname}": Cast(f.attname, models.TextField()) for f in target.fields}
        for pk, *values in target.model._base_manager.annotate(**raw).values_list("pk", *raw):
            stored[(target.model._meta.label, pk)] = tuple(values)
    return stored


def _stale() -> int:
    return sum(stale_values_count(target) for target in encrypted_models())


def _rotate(**options) -> str:
    out = io.StringIO()
    call_command("rotate_field_key", stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def test_the_encrypted_columns_are_found_by_their_type():
    assert {(t.model._meta.label, tuple(f.name for f in t.fields)) for t in encrypted_models()} == {
        ("authn.User", ("totp_secret",)),
        ("cards.Card", ("pan", "cvv")),
        ("events.WebhookEndpoint", ("secret", "previous_secret")),
    }


def test_after_rotation_only_the_new_key_is_needed(secrets):
    old, new = settings.FIELD_ENCRYPTION_KEY, Fernet.generate_key().decode()
    before = _plaintexts()
    assert _stale() == 0  # everything is under the one key configured

    with override_settings(FIELD_ENCRYPTION_KEY=f"{new},{old}"):
        stale = _stale()
        assert stale == sum(1 for values in _stored().values() for value in values if value) >= 5 * 2 + 2 + 2
        output = _rotate(batch_size=2)
        assert _stale() == 0

    assert f"Done: {stale} value(s) re-encrypted" in output
    assert "cards.Card (pan, cvv)" in output and "100%" in output
    with override_settings(FIELD_ENCRYPTION_KEY=new):
        assert _plaintexts() == before
        assert len(before["cards"]) >= 5 and len(before["totp"]) >= 2 and before["webhooks"]
    with override_settings(FIELD_ENCRYPTION_KEY=old), pytest.raises(ValueError, match="cannot be decrypted"):
        Card.objects.get(id=next(iter(secrets["cards"])))
    with override_settings(FIELD_ENCRYPTION_KEY=old), pytest.raises(ValueError, match="cannot be decrypted"):
        WebhookEndpoint.objects.get(id=secrets["endpoint"])


def test_a_crash_midway_keeps_what_was_done_and_a_rerun_completes(secrets, monkeypatch):
    old, new = settings.FIELD_ENCRYPTION_KEY, Fernet.generate_key().decode()
    before = _plaintexts()
    real_reencrypt = key_rotation.reencrypt
    calls = []

    def crash_after_three(token: str) -> str:
        if len(calls) == 3:
            raise RuntimeError("killed")
        calls.append(token)
        return real_reencrypt(token)

    with override_settings(FIELD_ENCRYPTION_KEY=f"{new},{old}"):
        stale = _stale()
        monkeypatch.setattr(key_rotation, "reencrypt", crash_after_three)
        with pytest.raises(RuntimeError, match="killed"):
            _rotate(batch_size=1)
        monkeypatch.setattr(key_rotation, "reencrypt", real_reencrypt)
        # Batches of one row: the rows committed before the crash stay rotated,
        # the row being rotated when it crashed is rolled back whole.
        left = _stale()
        assert 0 < stale - left <= 3 and left > 0

        output = _rotate(batch_size=1)

        assert _stale() == 0
        assert f"Done: {left} value(s) re-encrypted" in output
    with override_settings(FIELD_ENCRYPTION_KEY=new):
        assert _plaintexts() == before


def test_a_second_run_changes_nothing(secrets):
    old, new = settings.FIELD_ENCRYPTION_KEY, Fernet.generate_key().decode()
    with override_settings(FIELD_ENCRYPTION_KEY=f"{new},{old}"):
        _rotate()
        first = _stored()

        output = _rotate()

        assert _stored() == first
        assert "Done: 0 value(s) re-encrypted" in output


def test_a_value_no_configured_key_reads_stops_the_rotation_loudly(secrets):
    new, newer = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(FIELD_ENCRYPTION_KEY=f"{newer},{new}"), pytest.raises(ValueError):
        _rotate()


def test_a_record_with_an_empty_encrypted_column_saves_again(db):
    user = User.objects.create_user("no-totp@example.com", "No-Totp-Password-42", role="management")

    loaded = User.objects.get(pk=user.pk)
    loaded.first_name = "Renamed"
    loaded.save()

    again = User.objects.get(pk=user.pk)
    assert (again.first_name, again.totp_secret) == ("Renamed", "")
