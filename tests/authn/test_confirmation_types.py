"""A step-up confirmation reaches the services as a domain type: the body's
names stay at the edge."""

import pytest

from authn.serializers import ConfirmationSerializer, confirmation_of, passkey_step_up_data
from authn.services.passkeys import PasskeyAssertion
from authn.services.stepup import PasskeyConfirmation, PasskeyStepUp, PinConfirmation, TotpConfirmation

ASSERTION = {
    "credentialIdB64": "AQID",
    "clientDataJSON_B64": "e30",
    "authenticatorDataB64": "AAAA",
    "signatureB64": "BBBB",
}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"method": "totp", "code": "123456"}, TotpConfirmation(code="123456")),
        ({"method": "pin", "pin": "1234"}, PinConfirmation(pin="1234")),
        (
            {"method": "passkey", "passkeySession": "s-1", "assertion": ASSERTION},
            PasskeyConfirmation(
                session="s-1",
                assertion=PasskeyAssertion(
                    credential_id="AQID", client_data_json="e30", authenticator_data="AAAA", signature="BBBB"
                ),
            ),
        ),
        (
            {
                "method": "passkey",
                "passkeySession": "s-2",
                "assertion": {**ASSERTION, "userHandleB64": "CCCC"},
            },
            PasskeyConfirmation(
                session="s-2",
                assertion=PasskeyAssertion(
                    credential_id="AQID",
                    client_data_json="e30",
                    authenticator_data="AAAA",
                    signature="BBBB",
                    user_handle="CCCC",
                ),
            ),
        ),
    ],
)
def test_a_validated_confirmation_becomes_its_domain_type(body, expected):
    serializer = ConfirmationSerializer(data=body)
    assert serializer.is_valid(), serializer.errors

    assert confirmation_of(serializer.validated_data) == expected


def test_a_method_the_serializer_would_refuse_is_a_bug():
    with pytest.raises(ValueError):
        confirmation_of({"method": "sms", "code": "123456"})


def test_a_passkey_step_up_is_answered_in_the_apis_names():
    step_up = PasskeyStepUp(session="s-1", options={"challenge": "abc", "timeout": 300_000})

    assert passkey_step_up_data(step_up) == {
        "passkeySession": "s-1",
        "fido2options": {"challenge": "abc", "timeout": 300_000},
    }
