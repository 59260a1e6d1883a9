"""The sign-in routes' answers, from the sign-in services' results.

These keep the names the sign-in protocol answers with (`session_token`,
`access_token`, ... next to `fido2options`, `hasPasskey`, `otpauthUri`), as the
serializers of `authn.serializers` document them.
"""

from typing import Any

from authn.services.challenges import NextChallenge, SignedIn, SignInStep
from authn.services.passkeys import PasskeyRegistered, PasskeyRegistration
from authn.services.totp import TotpSetup


def signed_in_data(signed_in: SignedIn) -> dict[str, Any]:
    tokens = signed_in.tokens
    return {
        "authenticated": True,
        "access_token": tokens.access_token,
        "id_token": tokens.id_token,
        "refresh_token": tokens.refresh_token,
        "token_type": "Bearer",
        "expires_in": tokens.expires_in,
        "hasPasskey": signed_in.has_passkey,
        "hasMfa": signed_in.has_mfa,
    }


def next_challenge_data(challenge: NextChallenge) -> dict[str, Any]:
    data: dict[str, Any] = {
        "authenticated": False,
        "challenge": challenge.kind,
        "session_token": challenge.session_token,
    }
    if challenge.options is not None:
        data["fido2options"] = challenge.options
    return data


def sign_in_step_data(step: SignInStep) -> dict[str, Any]:
    return signed_in_data(step) if isinstance(step, SignedIn) else next_challenge_data(step)


def totp_setup_data(setup: TotpSetup) -> dict[str, Any]:
    return {"secret": setup.secret, "otpauthUri": setup.otpauth_uri, "session_token": setup.session_token}


def passkey_registration_data(registration: PasskeyRegistration) -> dict[str, Any]:
    return {"session_token": registration.session_token, "publicKey": registration.options}


def passkey_registered_data(registered: PasskeyRegistered) -> dict[str, Any]:
    data: dict[str, Any] = {"credentialId": registered.credential_id, "createdAt": registered.created_at}
    if registered.signed_in is not None:
        data.update(signed_in_data(registered.signed_in))
    return data
