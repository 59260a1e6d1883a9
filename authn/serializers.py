"""Request bodies and (for the OpenAPI document) response shapes of /v1/auth/*."""

import re

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers
from rest_framework.settings import api_settings

from authn.models import AuthChallenge
from authn.services import stepup
from authn.services.passkeys import PasskeyAssertion, PasskeyAttestation, b64url_decode
from bankapi.http.serializers import (
    InputSerializer,
    SingleLineTextField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictListField,
    WholeMatchValidator,
    unknown_fields,
)

Kind = AuthChallenge.Kind

# Challenges a sign-in step can answer (the others name enrolment and step-up sessions).
SIGN_IN_CHALLENGES = [
    Kind.NEW_PASSWORD_REQUIRED,
    Kind.EMAIL_VERIFICATION_REQUIRED,
    Kind.SOFTWARE_TOKEN_MFA,
    Kind.PASSKEY_REQUIRED,
    Kind.MFA_SETUP,
    Kind.SECURITY_SETUP_REQUIRED,
]


class SixDigitCodeField(StrictCharField):
    default_error_messages = {**StrictCharField.default_error_messages, "digits": "Must be a 6-digit string."}

    def __init__(self, **kwargs) -> None:
        # Checked in to_internal_value; listed so the OpenAPI document shows the pattern.
        super().__init__(validators=[WholeMatchValidator(r"^[0-9]{6}$")], **kwargs)

    def to_internal_value(self, data) -> str:
        value = super().to_internal_value(data)
        if not re.fullmatch(r"[0-9]{6}", value):
            self.fail("digits")
        return value


class Base64UrlField(StrictCharField):
    """A base64url string (padding optional); kept as sent once known to decode."""

    default_error_messages = {**StrictCharField.default_error_messages, "base64url": "Must be base64url."}
    # Padding optional: groups of 4, then 2 or 3 more characters, then any "=".
    openapi = {"pattern": "^([A-Za-z0-9_-]{4})*([A-Za-z0-9_-]{2,3})?=*$"}

    def to_internal_value(self, data) -> str:
        value = super().to_internal_value(data)
        try:
            b64url_decode(value)
        except ValueError:
            self.fail("base64url")
        return value


def _password(**kwargs) -> StrictCharField:
    # Bounded so that no one can make the server hash a megabyte; never trimmed.
    return StrictCharField(max_length=256, trim_whitespace=False, **kwargs)


def _session_token(**kwargs) -> StrictCharField:
    kwargs.setdefault("help_text", "The session_token of the previous step.")
    return StrictCharField(max_length=128, **kwargs)


class LoginInputSerializer(InputSerializer):
    email = StrictCharField(max_length=254)
    password = _password()


class Verify2faInputSerializer(InputSerializer):
    session_token = _session_token()
    totp_code = SixDigitCodeField(help_text="The current 6-digit code of the authenticator app.")


class ChangePasswordInputSerializer(InputSerializer):
    email = StrictCharField(max_length=254)
    temporary_password = _password()
    new_password = _password(help_text="At least 12 characters; not common, numeric or like the e-mail.")


class VerifyEmailInputSerializer(InputSerializer):
    session_token = _session_token()
    code = SixDigitCodeField(help_text="The 6-digit code e-mailed to the user.")


class MfaSetupInputSerializer(InputSerializer):
    session_token = _session_token(
        required=False,
        help_text="A SECURITY_SETUP_REQUIRED or MFA_SETUP session_token; omit it when sending the id_token.",
    )


class MfaVerifySetupInputSerializer(InputSerializer):
    session_token = _session_token(
        help_text="The session_token answered by mfa/setup (or an MFA_SETUP login)."
    )
    totp_code = SixDigitCodeField(help_text="A code from the newly added secret.")


class PasskeyRegisterStartInputSerializer(InputSerializer):
    friendly_name = SingleLineTextField(
        max_length=100, help_text="A label for the passkey, e.g. 'Work laptop'."
    )
    session_token = _session_token(
        required=False,
        help_text="A SECURITY_SETUP_REQUIRED session_token; omit it when sending the id_token.",
    )


class AttestationSerializer(serializers.Serializer):
    credentialIdB64 = Base64UrlField(max_length=1400)
    clientDataJSON_B64 = Base64UrlField(max_length=8192)
    attestationObjectB64 = Base64UrlField(max_length=65536)
    transports = StrictListField(child=StrictCharField(max_length=32), max_length=10)


def passkey_attestation_of(data: dict) -> PasskeyAttestation:
    """An `AttestationSerializer`'s validated data, in the domain's names."""
    return PasskeyAttestation(
        credential_id=data["credentialIdB64"],
        client_data_json=data["clientDataJSON_B64"],
        attestation_object=data["attestationObjectB64"],
        transports=tuple(data["transports"]),
    )


class PasskeyRegisterCompleteInputSerializer(InputSerializer):
    session_token = _session_token(help_text="The session_token answered by passkey/register/start.")
    attestation = AttestationSerializer()


class PasskeyAssertionSerializer(serializers.Serializer):
    """A WebAuthn assertion, as navigator.credentials.get() answers it, every binary
    value base64url without padding. Passkey sign-in and step-up confirmations take it."""

    credentialIdB64 = Base64UrlField(max_length=1400, help_text="The credential's rawId.")
    clientDataJSON_B64 = Base64UrlField(max_length=8192, help_text="response.clientDataJSON.")
    authenticatorDataB64 = Base64UrlField(max_length=8192, help_text="response.authenticatorData.")
    signatureB64 = Base64UrlField(max_length=2048, help_text="response.signature.")
    userHandleB64 = Base64UrlField(
        max_length=128, required=False, help_text="response.userHandle; may be omitted."
    )


def passkey_assertion_of(data: dict) -> PasskeyAssertion:
    """A `PasskeyAssertionSerializer`'s validated data, in the domain's names."""
    return PasskeyAssertion(
        credential_id=data["credentialIdB64"],
        client_data_json=data["clientDataJSON_B64"],
        authenticator_data=data["authenticatorDataB64"],
        signature=data["signatureB64"],
        user_handle=data.get("userHandleB64"),
    )


class PasskeyConfirmationSerializer(serializers.Serializer):
    method = StrictChoiceField(choices=[stepup.PASSKEY])
    passkeySession = StrictCharField(
        max_length=128,
        help_text="The passkeySession of the action's passkey-challenge: single-use, 5 minutes.",
    )
    assertion = PasskeyAssertionSerializer(
        help_text="What navigator.credentials.get() answered for the challenge's fido2options."
    )


class TotpConfirmationSerializer(serializers.Serializer):
    method = StrictChoiceField(choices=[stepup.TOTP])
    code = SixDigitCodeField(help_text="The current code of the user's authenticator app; accepted once.")


class PinConfirmationSerializer(serializers.Serializer):
    method = StrictChoiceField(choices=[stepup.PIN])
    pin = StrictCharField(
        max_length=6,
        min_length=4,
        validators=[WholeMatchValidator(r"^[0-9]{4,6}$", "Must be 4 to 6 digits.")],
        help_text="The user's step-up PIN. Only on programs that offer PIN confirmation.",
    )


_CONFIRMATION_SHAPES = {
    stepup.PASSKEY: PasskeyConfirmationSerializer,
    stepup.TOTP: TotpConfirmationSerializer,
    stepup.PIN: PinConfirmationSerializer,
}


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="Confirmation",
        # A copy typed as the parameter is (a dict of serializer classes or instances).
        serializers={**_CONFIRMATION_SHAPES},
        resource_type_field_name="method",
    )
)
class ConfirmationSerializer(InputSerializer):
    """A step-up confirmation, one of three shapes chosen by `method`:
    `{method: passkey, passkeySession, assertion}`, `{method: totp, code}` or
    `{method: pin, pin}`. Validates to the chosen shape's fields; any other key,
    at any depth, is an unknown field."""

    def to_internal_value(self, data) -> dict:
        if not isinstance(data, dict):
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: ["Must be an object."]})
        method = data.get("method")
        shape = _CONFIRMATION_SHAPES.get(method) if isinstance(method, str) else None
        if shape is None:
            raise serializers.ValidationError({"method": [f"Must be one of: {', '.join(stepup.METHODS)}."]})
        unknown = unknown_fields(shape(), data)
        if unknown:
            raise serializers.ValidationError(unknown)
        inner = shape(data=data)
        inner.is_valid(raise_exception=True)
        return dict(inner.validated_data)

    def to_representation(self, instance) -> dict:
        return instance


def confirmation_of(data: dict) -> stepup.Confirmation:
    """A `ConfirmationSerializer`'s validated data as the confirmation it is."""
    method = data["method"]
    if method == stepup.PASSKEY:
        return stepup.PasskeyConfirmation(
            session=data["passkeySession"], assertion=passkey_assertion_of(data["assertion"])
        )
    if method == stepup.TOTP:
        return stepup.TotpConfirmation(code=data["code"])
    if method == stepup.PIN:
        return stepup.PinConfirmation(pin=data["pin"])
    # The serializer refuses any other method: reaching here is a bug.
    raise ValueError(f"Not a confirmation method: {method!r}.")


class VerifyPasskeyInputSerializer(InputSerializer):
    session_token = _session_token(help_text="The PASSKEY_REQUIRED session_token of login.")
    assertion = PasskeyAssertionSerializer()


class RefreshInputSerializer(InputSerializer):
    refresh_token = StrictCharField(max_length=256)


class LogoutInputSerializer(InputSerializer):
    access_token = StrictCharField(max_length=8192, help_text="The access token sent as the bearer.")


class CredentialDescriptorSerializer(serializers.Serializer):
    type = serializers.CharField(default="public-key")
    id = serializers.CharField(help_text="Credential id, base64url.")


class Fido2OptionsSerializer(serializers.Serializer):
    challenge = serializers.CharField(help_text="base64url without padding.")
    timeout = serializers.IntegerField(help_text="Milliseconds.")
    rpId = serializers.CharField()
    userVerification = serializers.CharField()
    allowCredentials = CredentialDescriptorSerializer(many=True)


class ChallengeSerializer(serializers.Serializer):
    authenticated = serializers.BooleanField(default=False)
    challenge = serializers.ChoiceField(choices=SIGN_IN_CHALLENGES)
    session_token = serializers.CharField(help_text="Opaque, single-use, valid 5 minutes.")
    fido2options = Fido2OptionsSerializer(
        required=False, help_text="PASSKEY_REQUIRED only: hand to navigator.credentials.get()."
    )


class TokensSerializer(serializers.Serializer):
    authenticated = serializers.BooleanField(default=True)
    access_token = serializers.CharField()
    id_token = serializers.CharField()
    refresh_token = serializers.CharField()
    token_type = serializers.CharField(default="Bearer")
    expires_in = serializers.IntegerField(help_text="Seconds the access and id tokens live.")
    hasPasskey = serializers.BooleanField()
    hasMfa = serializers.BooleanField()


class MfaSetupSerializer(serializers.Serializer):
    secret = serializers.CharField(help_text="Base32 TOTP secret.")
    otpauthUri = serializers.CharField(help_text="otpauth:// URI, for a QR code.")
    session_token = serializers.CharField(help_text="MFA_SETUP session for mfa/verify-setup.")


class RelyingPartySerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()


class PasskeyUserSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="User handle, base64url.")
    name = serializers.CharField()
    displayName = serializers.CharField()


class PubKeyCredParamSerializer(serializers.Serializer):
    type = serializers.CharField(default="public-key")
    alg = serializers.IntegerField(help_text="COSE algorithm identifier.")


class AuthenticatorSelectionSerializer(serializers.Serializer):
    residentKey = serializers.CharField()
    requireResidentKey = StrictBooleanField()
    userVerification = serializers.CharField()


class CreationOptionsSerializer(serializers.Serializer):
    rp = RelyingPartySerializer()
    user = PasskeyUserSerializer()
    challenge = serializers.CharField(help_text="base64url without padding.")
    pubKeyCredParams = PubKeyCredParamSerializer(many=True)
    timeout = serializers.IntegerField(help_text="Milliseconds.")
    attestation = serializers.CharField()
    excludeCredentials = CredentialDescriptorSerializer(many=True, required=False)
    authenticatorSelection = AuthenticatorSelectionSerializer(required=False)


class PasskeyRegistrationOptionsSerializer(serializers.Serializer):
    session_token = serializers.CharField(
        help_text="PASSKEY_REGISTRATION session for passkey/register/complete."
    )
    publicKey = CreationOptionsSerializer(help_text="Hand to navigator.credentials.create().")


class PasskeyRegistrationResultSerializer(serializers.Serializer):
    credentialId = serializers.CharField(help_text="base64url.")
    createdAt = serializers.DateTimeField()

    def get_fields(self) -> dict:
        # A registration begun from a SECURITY_SETUP_REQUIRED session finishes the
        # sign-in: the token response fields come too, and only then.
        fields = super().get_fields()
        for name, field in TokensSerializer().get_fields().items():
            field.required = False
            fields[name] = field
        return fields


def passkey_step_up_data(step_up: stepup.PasskeyStepUp) -> dict:
    """`{passkeySession, fido2options}`, as `StepUpPasskeyChallengeSerializer` documents it."""
    return {"passkeySession": step_up.session, "fido2options": step_up.options}


class StepUpPasskeyChallengeSerializer(serializers.Serializer):
    passkeySession = serializers.CharField(
        help_text="Opaque, single-use, valid 5 minutes; send it back in the passkey confirmation."
    )
    fido2options = Fido2OptionsSerializer(
        help_text="Hand to navigator.credentials.get(); allowCredentials lists every passkey of the user."
    )
