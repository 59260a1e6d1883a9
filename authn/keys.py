"""RS256 signing key and the JWKS that publishes its public half."""

import base64
import hashlib
from functools import cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey, RSAPublicKey
from django.conf import settings
from django.core.signals import setting_changed


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def key_id(public_key: RSAPublicKey) -> str:
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:16]


@cache
def signing_key() -> tuple[str, RSAPrivateKey]:
    key = serialization.load_pem_private_key(settings.JWT_PRIVATE_KEY.encode(), password=None)
    if not isinstance(key, RSAPrivateKey):
        raise ValueError("JWT_PRIVATE_KEY must be an RSA private key")
    return key_id(key.public_key()), key


@cache
def verification_keys() -> dict[str, RSAPublicKey]:
    """Public keys by kid: the current one plus any still honoured after a rotation."""
    kid, private = signing_key()
    keys = {kid: private.public_key()}
    for block in settings.JWT_PREVIOUS_PUBLIC_KEYS.split("-----END PUBLIC KEY-----"):
        if "BEGIN PUBLIC KEY" in block:
            public = serialization.load_pem_public_key((block + "-----END PUBLIC KEY-----").encode())
            if isinstance(public, RSAPublicKey):
                keys[key_id(public)] = public
    return keys


def _keys_changed(*, setting: str, **kwargs) -> None:
    if setting in ("JWT_PRIVATE_KEY", "JWT_PREVIOUS_PUBLIC_KEYS"):
        signing_key.cache_clear()
        verification_keys.cache_clear()


setting_changed.connect(_keys_changed, dispatch_uid="authn.keys.rotation")


def jwks() -> dict:
    entries = []
    for kid, public in verification_keys().items():
        numbers = public.public_numbers()
        entries.append(
            {
                "kty": "RSA",
                "use": "sig",
                "alg": "RS256",
                "kid": kid,
                "n": _b64(numbers.n),
                "e": _b64(numbers.e),
            }
        )
    return {"keys": entries}
