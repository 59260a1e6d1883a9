"""Bank account identifiers: UK sort code + account number, IBAN + BIC.

Shared by saved beneficiaries, inline payees, batch items and international
transfers, so every route validates an account the same way.
"""

import re
import string

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from bankapi.serializers import StrictCharField, StrictChoiceField

# ASCII digits only, matched whole (`fullmatch`): `\d` would admit other scripts'
# digits and `$` a trailing newline.
SORT_CODE = re.compile(r"[0-9]{6}")
ACCOUNT_NUMBER = re.compile(r"[0-9]{8}")
IBAN_SHAPE = re.compile(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}")
BIC_SHAPE = re.compile(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?")
# The same shapes for the OpenAPI document, as sent (before normalising): an IBAN
# may carry spaces or tabs and lower case, a sort code hyphens, a BIC lower case.
# The IBAN's mod-97 check digits cannot be written as a pattern.
IBAN_PATTERN = r"^[ \t]*([A-Za-z][ \t]*){2}([0-9][ \t]*){2}([A-Za-z0-9][ \t]*){11,30}$"
SORT_CODE_PATTERN = r"^-*([0-9]-*){6}$"
ACCOUNT_NUMBER_PATTERN = r"^[0-9]{8}$"
BIC_PATTERN = r"^[A-Za-z]{6}[A-Za-z0-9]{2}([A-Za-z0-9]{3})?$"


def normalise_iban(value: str) -> str:
    return re.sub(r"[ \t]+", "", value).upper()


def iban_is_valid(value: str) -> bool:
    """ISO 13616 mod-97 check on a normalised IBAN."""
    iban = normalise_iban(value)
    if not IBAN_SHAPE.fullmatch(iban):
        return False
    rearranged = iban[4:] + iban[:4]
    digits = "".join(str(string.ascii_uppercase.index(ch) + 10) if ch.isalpha() else ch for ch in rearranged)
    return int(digits) % 97 == 1


class UkAccountSerializer(serializers.Serializer):
    """A UK account: sort code and account number."""

    type = StrictChoiceField(choices=["uk"])
    sortCode = StrictCharField(
        help_text="6 digits (hyphens allowed).", openapi={"pattern": SORT_CODE_PATTERN, "example": "040004"}
    )
    accountNumber = StrictCharField(
        help_text="8 digits.", openapi={"pattern": ACCOUNT_NUMBER_PATTERN, "example": "12345678"}
    )


class IbanAccountSerializer(serializers.Serializer):
    """An account by IBAN, with an optional BIC."""

    type = StrictChoiceField(choices=["iban"])
    iban = StrictCharField(
        max_length=42,
        help_text="Spaces allowed; its check digits must be right (mod-97).",
        openapi={"pattern": IBAN_PATTERN, "example": "GB82WEST12345698765432"},
    )
    bic = StrictCharField(required=False, help_text="8 or 11 characters.", openapi={"pattern": BIC_PATTERN})


# The document states the two shapes (which keys each type requires and takes);
# AccountObjectSerializer checks them in one place.
@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="AccountObject",
        serializers={"uk": UkAccountSerializer, "iban": IbanAccountSerializer},
        resource_type_field_name="type",
    )
)
class AccountObjectSerializer(serializers.Serializer):
    """`{type: uk, sortCode, accountNumber}` or `{type: iban, iban, bic?}`."""

    type = StrictChoiceField(choices=["uk", "iban"])
    sortCode = StrictCharField(
        required=False,
        help_text="6 digits (hyphens allowed); with type uk.",
        openapi={"pattern": SORT_CODE_PATTERN, "example": "040004"},
    )
    accountNumber = StrictCharField(
        required=False,
        help_text="8 digits; with type uk.",
        openapi={"pattern": ACCOUNT_NUMBER_PATTERN, "example": "12345678"},
    )
    iban = StrictCharField(
        required=False,
        max_length=42,
        help_text="With type iban; spaces allowed; its check digits must be right (mod-97).",
        openapi={"pattern": IBAN_PATTERN, "example": "GB82WEST12345698765432"},
    )
    bic = StrictCharField(
        required=False,
        help_text="Optional, with type iban: 8 or 11 characters.",
        openapi={"pattern": BIC_PATTERN},
    )

    def validate(self, data: dict) -> dict:
        errors: dict[str, str] = {}
        if data["type"] == "uk":
            sort_code = data.get("sortCode", "").replace("-", "")
            if not SORT_CODE.fullmatch(sort_code):
                errors["sortCode"] = "Must be 6 digits."
            if not ACCOUNT_NUMBER.fullmatch(data.get("accountNumber", "")):
                errors["accountNumber"] = "Must be 8 digits."
            for name in ("iban", "bic"):
                if name in data:
                    errors[name] = "Not used with type uk."
            if errors:
                raise serializers.ValidationError(errors)
            return {"type": "uk", "sortCode": sort_code, "accountNumber": data["accountNumber"]}
        iban = normalise_iban(data.get("iban", ""))
        if not iban_is_valid(iban):
            errors["iban"] = "Must be a valid IBAN."
        bic = data.get("bic", "").upper()
        if bic and not BIC_SHAPE.fullmatch(bic):
            errors["bic"] = "Must be a valid BIC (8 or 11 characters)."
        for name in ("sortCode", "accountNumber"):
            if name in data:
                errors[name] = "Not used with type iban."
        if errors:
            raise serializers.ValidationError(errors)
        out = {"type": "iban", "iban": iban}
        if bic:
            out["bic"] = bic
        return out


class PayeeSerializer(serializers.Serializer):
    """Inline payee details: `{name, account, accountType?}`."""

    name = StrictCharField(max_length=140)
    account = AccountObjectSerializer()
    accountType = StrictChoiceField(choices=["CONSUMER", "BUSINESS"], required=False)
