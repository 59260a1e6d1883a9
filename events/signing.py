"""Webhook signatures as the Standard Webhooks specification (v1) defines them.

A receiver can verify them with that specification's libraries (for example the
`standardwebhooks` package) or with a few lines of its own: see the README.
"""

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
SECRET_BYTES = 32


def secret_generate() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(PREFIX))


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_header(secrets_: list[str], message_id: str, timestamp: int, body: bytes) -> str:
    """Space-separated signatures, one per live secret (two during a rotation)."""
    return " ".join(signature(secret, message_id, timestamp, body) for secret in secrets_)
