"""Encryption at rest for secrets kept in the database (TOTP seeds, card data,
webhook secrets).

Fernet (AES-128-CBC + HMAC-SHA256) from `cryptography`, keyed by
FIELD_ENCRYPTION_KEY. Several keys may be given, comma-separated, newest first:
the first encrypts, all decrypt, so keys can be rotated without downtime
(`manage.py rotate_field_key` re-encrypts the stored values with the first).
"""

from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.signals import setting_changed
from django.db import models


def field_keys() -> list[str]:
    """The configured keys, newest (the one that encrypts) first."""
    return [key.strip() for key in settings.FIELD_ENCRYPTION_KEY.split(",") if key.strip()]


@cache
def _fernets() -> tuple[Fernet, MultiFernet]:
    keys = [Fernet(key.encode()) for key in field_keys()]
    if not keys:
        raise ValueError("FIELD_ENCRYPTION_KEY holds no key")
    return keys[0], MultiFernet(keys)


def _fernet() -> MultiFernet:
    return _fernets()[1]


def _keys_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "FIELD_ENCRYPTION_KEY":
        _fernets.cache_clear()


setting_changed.connect(_keys_changed, dispatch_uid="bankapi.crypto.keys")


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ValueError("Encrypted value cannot be decrypted with the configured keys") from exc


def encrypted_with_newest_key(token: str) -> bool:
    """Whether a stored value is already encrypted with the key that encrypts."""
    try:
        _fernets()[0].decrypt(token.encode())
    except InvalidToken:
        return False
    return True


def reencrypt(token: str) -> str:
    """The same plaintext encrypted with the newest key; refused loudly if no
    configured key decrypts the value."""
    try:
        return _fernet().rotate(token.encode()).decode()
    except InvalidToken as exc:
        raise ValueError("Encrypted value cannot be decrypted with the configured keys") from exc


class EncryptedTextField(models.TextField):
    """A text column stored encrypted; reads and writes plaintext in Python."""

    def from_db_value(self, value: str | None, expression: object, connection: object) -> str | None:
        # An empty column reads as it is stored: reading it as None would make
        # the next full save of the record write NULL into a NOT NULL column.
        return value if value in (None, "") else decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return value if value in (None, "") else encrypt(value)
