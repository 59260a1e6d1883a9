"""Rotating the JWT signing key without downtime: new tokens are signed with the
new key while tokens signed with the previous one still verify, and the JWKS
publishes both, until the previous public key is removed from the setting."""

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.test import override_settings

from authn.keys import key_id, signing_key
from tests.support.auth import tokens_for


def _new_private_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _public_pem(private_pem: str) -> str:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def _kids(api) -> list[str]:
    return [key["kid"] for key in api.get("/.well-known/jwks.json").json()["keys"]]


def test_a_token_of_the_previous_key_verifies_during_the_overlap_only(api, totp_person, consumer_program):
    old_pem, new_pem = settings.JWT_PRIVATE_KEY, _new_private_key()
    email, program = totp_person.email, str(consumer_program.id)
    old_kid = signing_key()[0]
    old_token = tokens_for(email, program).access_token
    new_kid = key_id(serialization.load_pem_private_key(new_pem.encode(), password=None).public_key())

    with override_settings(JWT_PRIVATE_KEY=new_pem, JWT_PREVIOUS_PUBLIC_KEYS=_public_pem(old_pem)):
        overlap_old = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {old_token}")
        new_token = tokens_for(email, program).access_token
        overlap_new = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {new_token}")
        overlap_kids = _kids(api)
    with override_settings(JWT_PRIVATE_KEY=new_pem, JWT_PREVIOUS_PUBLIC_KEYS=""):
        after_old = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {old_token}")
        after_new = api.get("/v1/capabilities", HTTP_AUTHORIZATION=f"Bearer {new_token}")
        after_kids = _kids(api)

    assert jwt.get_unverified_header(old_token)["kid"] == old_kid != new_kid
    assert jwt.get_unverified_header(new_token)["kid"] == new_kid
    assert (overlap_old.status_code, overlap_new.status_code) == (200, 200)
    assert overlap_kids == [new_kid, old_kid]
    assert (after_old.status_code, after_new.status_code) == (401, 200)
    assert after_kids == [new_kid]
