"""Encryption at rest for secrets kept in the database (TOTP seeds, card data).

Fernet (AES-128-CBC + HMAC-SHA256) from `cryptography`, keyed by
FIELD_ENCRYPTION_KEY. Several keys may be given, comma-separated: the first
encrypts, all decrypt, so keys can be rotated.
"""

from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models


@cache
def _fernet() -> MultiFernet:
    keys = [key.strip() for key in settings.FIELD_ENCRYPTION_KEY.split(",") if key.strip()]
    return MultiFernet([Fernet(key.encode()) for key in keys])


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ValueError("Encrypted value cannot be decrypted with the configured keys") from exc


class EncryptedTextField(models.TextField):
    """A text column stored encrypted; reads and writes plaintext in Python."""

    def from_db_value(self, value: str | None, expression: object, connection: object) -> str | None:
        return None if value in (None, "") else decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return value if value in (None, "") else encrypt(value)
