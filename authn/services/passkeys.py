"""Passkeys (WebAuthn, py_webauthn): registration, sign-in and step-up assertions.

Every ceremony is checked against settings.WEBAUTHN_RP_ID and
settings.WEBAUTHN_ORIGINS. Replays are stopped twice: a ceremony's challenge
lives in a single-use session, and an authenticator that counts its signatures
must show a higher count each time. Binary values on the wire are base64url
without padding.
"""

import base64
import binascii
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import options_to_json_dict
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from authn.models import PasskeyCredential, User
from authn.services.challenges import (
    SESSION_LIFETIME,
    CredentialRejected,
    Kind,
    SignedIn,
    challenge_attempt,
    challenge_consume,
    challenge_create,
    challenge_refusal,
    enrolling_user,
    sign_in_complete,
)
from authn.services.throttle import passkey_sign_in_attempt, passkey_sign_in_clear
from bankapi.errors import ApiError, ErrorCode

CEREMONY_TIMEOUT_MS = int(SESSION_LIFETIME.total_seconds() * 1000)
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class PasskeyRegistration:
    """A passkey registration begun: its PASSKEY_REGISTRATION session and the
    WebAuthn creation options to hand to navigator.credentials.create()."""

    session_token: str
    options: dict[str, Any]


@dataclass(frozen=True)
class PasskeyAttestation:
    """What navigator.credentials.create() answered, each binary value base64url:
    the credential's rawId, the response's clientDataJSON and attestationObject,
    and the transports the authenticator named."""

    credential_id: str
    client_data_json: str
    attestation_object: str
    transports: tuple[str, ...]


@dataclass(frozen=True)
class PasskeyRegistered:
    """A passkey kept: its credential id (base64url) and when; `signed_in` when the
    registration finished a sign-in."""

    credential_id: str
    created_at: datetime
    signed_in: SignedIn | None = None


def b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Strict base64url (padding optional): a stray character is an error, not skipped."""
    if not isinstance(text, str):
        raise ValueError("Must be base64url")
    stripped = text.rstrip("=")
    if not _BASE64URL.fullmatch(stripped) or len(stripped) % 4 == 1:
        raise ValueError("Must be base64url")
    try:
        return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except binascii.Error as exc:
        raise ValueError("Must be base64url") from exc


def _descriptors(user: User) -> list[PublicKeyCredentialDescriptor]:
    return [
        PublicKeyCredentialDescriptor(id=bytes(credential_id))
        for credential_id in user.passkeys.order_by("created_at").values_list("credential_id", flat=True)
    ]


def passkey_registration_start(
    *,
    program_id: uuid.UUID | None,
    session_token: str | None,
    bearer_user: User | None,
    friendly_name: str,
) -> PasskeyRegistration:
    """POST passkey/register/start: creation options and a PASSKEY_REGISTRATION session.

    Taken with a SECURITY_SETUP_REQUIRED session, the ceremony finishes a sign-in,
    so completing it also answers tokens; with the id-token bearer it only adds a
    passkey.
    """
    user, security_setup = enrolling_user(
        program_id=program_id,
        session_token=session_token,
        kinds=[Kind.SECURITY_SETUP_REQUIRED],
        bearer_user=bearer_user,
    )
    options = generate_registration_options(
        rp_id=settings.WEBAUTHN_RP_ID,
        rp_name=settings.WEBAUTHN_RP_NAME,
        user_id=user.id.bytes,
        user_name=user.email,
        user_display_name=f"{user.first_name} {user.last_name}".strip() or user.email,
        timeout=CEREMONY_TIMEOUT_MS,
        exclude_credentials=_descriptors(user),
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
    )
    session_token = challenge_create(
        user,
        Kind.PASSKEY_REGISTRATION,
        secret=options.challenge,
        context={"friendly_name": friendly_name, "security_setup": security_setup},
    )
    return PasskeyRegistration(session_token=session_token, options=options_to_json_dict(options))


def passkey_registration_complete(
    *,
    program_id: uuid.UUID | None,
    session_token: str,
    attestation: PasskeyAttestation,
    bearer_user: User | None,
) -> PasskeyRegistered:
    """POST passkey/register/complete: verify the attestation and keep the credential.

    An id-token bearer, if sent, must be the user who started the ceremony.
    """
    challenge = challenge_attempt(session_token, [Kind.PASSKEY_REGISTRATION], program_id)
    user = challenge.user
    if bearer_user is not None and bearer_user.id != user.id:
        raise ApiError(ErrorCode.UNAUTHORIZED, "The bearer token belongs to another user")
    try:
        credential_id = b64url_decode(attestation.credential_id)
        verified = verify_registration_response(
            credential={
                "id": b64url_encode(credential_id),
                "rawId": b64url_encode(credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": attestation.client_data_json,
                    "attestationObject": attestation.attestation_object,
                    "transports": list(attestation.transports),
                },
            },
            expected_challenge=bytes(challenge.secret),
            expected_rp_id=settings.WEBAUTHN_RP_ID,
            expected_origin=list(settings.WEBAUTHN_ORIGINS),
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        # TypeError: py_webauthn indexes into CBOR it has not type-checked.
        raise challenge_refusal(challenge, "The passkey registration could not be verified") from exc
    if verified.credential_id != credential_id:
        raise challenge_refusal(challenge, "credentialIdB64 is not the credential the authenticator created")
    try:
        with transaction.atomic():
            challenge_consume(challenge)
            passkey = PasskeyCredential.objects.create(
                user=user,
                credential_id=verified.credential_id,
                public_key=verified.credential_public_key,
                sign_count=verified.sign_count,
                transports=list(attestation.transports),
                friendly_name=challenge.context.get("friendly_name", ""),
            )
    except IntegrityError as exc:
        raise CredentialRejected("This passkey is already registered") from exc
    return PasskeyRegistered(
        credential_id=b64url_encode(verified.credential_id),
        created_at=passkey.created_at,
        # A registration begun from a SECURITY_SETUP_REQUIRED session finishes the sign-in.
        signed_in=sign_in_complete(user) if challenge.context.get("security_setup") else None,
    )


@dataclass(frozen=True)
class PasskeyAssertion:
    """A WebAuthn assertion as navigator.credentials.get() answered it, each
    binary value base64url: the credential's rawId, the response's
    clientDataJSON, authenticatorData and signature, and its userHandle when sent."""

    credential_id: str
    client_data_json: str
    authenticator_data: str
    signature: str
    user_handle: str | None = None


def passkey_assertion_options(user: User, challenge: bytes | None = None) -> tuple[bytes, dict]:
    """A new assertion challenge for the user's passkeys: (challenge bytes, `fido2options`).

    Keep the bytes (e.g. as an AuthChallenge's `secret`) and hand them back to
    `passkey_assertion_verify` with the browser's answer. `challenge`, when
    given, is the challenge (an approval's: its content hash and a fresh nonce);
    otherwise it is random.
    """
    options = generate_authentication_options(
        challenge=challenge,
        rp_id=settings.WEBAUTHN_RP_ID,
        timeout=CEREMONY_TIMEOUT_MS,
        allow_credentials=_descriptors(user),
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    return options.challenge, options_to_json_dict(options)


def passkey_assertion_verify(user: User, challenge: bytes, assertion: PasskeyAssertion) -> PasskeyCredential:
    """Verify an assertion over `challenge` by one of the user's passkeys.

    Raises CredentialRejected (401 INVALID_CREDENTIALS) when it does not verify.
    The challenge's single use is the caller's to enforce.
    """
    rejected = CredentialRejected("The passkey assertion could not be verified", retryable=True)
    try:
        credential_id = b64url_decode(assertion.credential_id)
        user_handle = assertion.user_handle
        if user_handle is not None and b64url_decode(user_handle) != user.id.bytes:
            raise rejected
        passkey = user.passkeys.filter(credential_id=credential_id).first()
        if passkey is None:
            raise rejected
        verified = verify_authentication_response(
            credential={
                "id": b64url_encode(credential_id),
                "rawId": b64url_encode(credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": assertion.client_data_json,
                    "authenticatorData": assertion.authenticator_data,
                    "signature": assertion.signature,
                    "userHandle": user_handle,
                },
            },
            expected_challenge=challenge,
            expected_rp_id=settings.WEBAUTHN_RP_ID,
            expected_origin=list(settings.WEBAUTHN_ORIGINS),
            credential_public_key=bytes(passkey.public_key),
            credential_current_sign_count=passkey.sign_count,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError) as exc:
        raise rejected from exc
    # Conditional on the count read above: of two assertions racing past the
    # library's count check with the same count, only one moves it.
    moved = PasskeyCredential.objects.filter(id=passkey.id, sign_count=passkey.sign_count).update(
        sign_count=verified.new_sign_count, last_used_at=timezone.now()
    )
    if not moved:
        raise rejected
    return passkey


def passkey_sign_in(
    *, program_id: uuid.UUID | None, session_token: str, assertion: PasskeyAssertion
) -> SignedIn:
    """POST verify-passkey: complete PASSKEY_REQUIRED; answers tokens."""
    challenge = challenge_attempt(session_token, [Kind.PASSKEY_REQUIRED], program_id)
    # Counted per user before the assertion is checked: five failed sign-ins lock
    # passkey sign-in for the user, across sessions.
    passkey_sign_in_attempt(challenge.user)
    try:
        passkey_assertion_verify(challenge.user, bytes(challenge.secret), assertion)
    except CredentialRejected as exc:
        raise challenge_refusal(challenge, exc.message) from exc
    passkey_sign_in_clear(challenge.user)
    challenge_consume(challenge)
    return sign_in_complete(challenge.user)
