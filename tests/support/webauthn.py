"""A software WebAuthn authenticator for tests: what a browser and a security key
would send, built from the W3C WebAuthn format itself.

One EC P-256 credential (COSE ES256), `none` attestation. Registration answers
`publicKey` creation options with the attestation object
`{fmt: "none", attStmt: {}, authData}` where authData is
rpIdHash | flags | signCount | aaguid | credentialIdLength | credentialId | COSE key.
An assertion signs authData || SHA-256(clientDataJSON) with ECDSA-SHA256.
Wire values are base64url without padding.
"""

import base64
import hashlib
import json
import os
import struct

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

USER_PRESENT = 0x01
USER_VERIFIED = 0x04
ATTESTED_CREDENTIAL_DATA = 0x40
AAGUID = bytes(range(16))


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftwareAuthenticator:
    """One passkey. `counts=False` models an authenticator that keeps no signature counter."""

    def __init__(
        self, *, rp_id: str = "localhost", origin: str = "http://localhost:8000", counts: bool = True
    ):
        self.rp_id = rp_id
        self.origin = origin
        self.counts = counts
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.sign_count = 0
        self.user_handle: bytes | None = None

    @property
    def credential_id_b64(self) -> str:
        return b64url(self.credential_id)

    def _cose_public_key(self) -> bytes:
        numbers = self.private_key.public_key().public_numbers()
        return cbor2.dumps(
            {
                1: 2,  # kty: EC2
                3: -7,  # alg: ES256
                -1: 1,  # crv: P-256
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )

    @staticmethod
    def _client_data(kind: str, challenge: str, origin: str) -> bytes:
        return json.dumps(
            {"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": False}
        ).encode()

    def _auth_data(self, rp_id: str, flags: int, sign_count: int, attested: bytes = b"") -> bytes:
        return (
            hashlib.sha256(rp_id.encode()).digest()
            + bytes([flags])
            + struct.pack(">I", sign_count)
            + attested
        )

    def create(self, public_key: dict, *, origin: str | None = None, rp_id: str | None = None) -> dict:
        """navigator.credentials.create(): the attestation for passkey/register/complete."""
        self.user_handle = unb64url(public_key["user"]["id"])
        attested = (
            AAGUID + struct.pack(">H", len(self.credential_id)) + self.credential_id + self._cose_public_key()
        )
        auth_data = self._auth_data(
            rp_id or public_key["rp"]["id"],
            USER_PRESENT | USER_VERIFIED | ATTESTED_CREDENTIAL_DATA,
            self.sign_count,
            attested,
        )
        client_data = self._client_data("webauthn.create", public_key["challenge"], origin or self.origin)
        attestation_object = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return {
            "credentialIdB64": self.credential_id_b64,
            "clientDataJSON_B64": b64url(client_data),
            "attestationObjectB64": b64url(attestation_object),
            "transports": ["internal"],
        }

    def get(
        self,
        fido2options: dict,
        *,
        origin: str | None = None,
        rp_id: str | None = None,
        sign_count: int | None = None,
    ) -> dict:
        """navigator.credentials.get(): the assertion for verify-passkey or a step-up.

        `sign_count` overrides the counter (to forge a replay); otherwise a counting
        authenticator increments it.
        """
        if sign_count is None:
            if self.counts:
                self.sign_count += 1
            sign_count = self.sign_count
        auth_data = self._auth_data(rp_id or fido2options["rpId"], USER_PRESENT | USER_VERIFIED, sign_count)
        client_data = self._client_data("webauthn.get", fido2options["challenge"], origin or self.origin)
        signature = self.private_key.sign(
            auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256())
        )
        assertion = {
            "credentialIdB64": self.credential_id_b64,
            "clientDataJSON_B64": b64url(client_data),
            "authenticatorDataB64": b64url(auth_data),
            "signatureB64": b64url(signature),
        }
        if self.user_handle is not None:
            assertion["userHandleB64"] = b64url(self.user_handle)
        return assertion
