"""Bank account identifiers: UK sort code + account number, IBAN + BIC.

Shared by saved beneficiaries, inline payees, batch items and international
transfers, so every route validates an account the same way. The IBAN and BIC
rules themselves are in `bankapi.codes`.
"""

import re
from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from bankapi.codes import BIC_PATTERN, IBAN_PATTERN, bic_problem, iban_problem, normalise_bic, normalise_iban
from bankapi.http.serializers import (
    SingleLineTextField,
    StrictCharField,
    StrictChoiceField,
    WholeMatchValidator,
)

# ASCII digits only, matched whole (`fullmatch`): `\d` would admit other scripts'
# digits and `$` a trailing newline.
SORT_CODE = re.compile(r"[0-9]{6}")
ACCOUNT_NUMBER = re.compile(r"[0-9]{8}")
# The same shapes for the OpenAPI document, as sent (before normalising): a sort
# code may carry hyphens.
SORT_CODE_PATTERN = r"^-*([0-9]-*){6}$"
ACCOUNT_NUMBER_PATTERN = r"^[0-9]{8}$"
IBAN_HELP = "Spaces allowed; the country's length and account format, and right check digits (mod-97)."
BIC_HELP = (
    "8 or 11 characters with a real country; where the IBAN's country has a bank registry, "
    "one of the BICs it lists for the IBAN's bank."
)


def _refuse(problem: Callable[[str], str | None]) -> Callable[[str], None]:
    """A field validator from a `bankapi.codes` rule, with the rule's own reason."""

    def validate(value: str) -> None:
        reason = problem(value)
        if reason:
            raise serializers.ValidationError(reason)

    return validate


def _sort_code_field(help_text: str, **kwargs: Any) -> StrictCharField:
    return StrictCharField(
        help_text=help_text,
        validators=[WholeMatchValidator(SORT_CODE_PATTERN, "Must be 6 digits.")],
        openapi={"example": "040004"},
        **kwargs,
    )


def _account_number_field(help_text: str, **kwargs: Any) -> StrictCharField:
    return StrictCharField(
        help_text=help_text,
        validators=[WholeMatchValidator(ACCOUNT_NUMBER_PATTERN, "Must be 8 digits.")],
        openapi={"example": "12345678"},
        **kwargs,
    )


def _iban_field(help_text: str, **kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=42,
        help_text=help_text,
        validators=[_refuse(iban_problem)],
        openapi={"pattern": IBAN_PATTERN, "example": "GB82WEST12345698765432"},
        **kwargs,
    )


def _bic_field(help_text: str, **kwargs: Any) -> StrictCharField:
    # Alone here; against the IBAN's bank registry in AccountObjectSerializer.validate.
    return StrictCharField(
        help_text=help_text,
        validators=[_refuse(bic_problem)],
        openapi={"pattern": BIC_PATTERN, "example": "NWBKGB2L"},
        **kwargs,
    )


class UkAccountSerializer(serializers.Serializer):
    """A UK account: sort code and account number."""

    type = StrictChoiceField(choices=["uk"])
    sortCode = _sort_code_field("6 digits (hyphens allowed).")
    accountNumber = _account_number_field("8 digits.")


class IbanAccountSerializer(serializers.Serializer):
    """An account by IBAN, with an optional BIC."""

    type = StrictChoiceField(choices=["iban"])
    iban = _iban_field(IBAN_HELP)
    bic = _bic_field(BIC_HELP, required=False)


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
    sortCode = _sort_code_field("6 digits (hyphens allowed); with type uk.", required=False)
    accountNumber = _account_number_field("8 digits; with type uk.", required=False)
    iban = _iban_field(f"With type iban. {IBAN_HELP}", required=False)
    bic = _bic_field(f"Optional, with type iban: {BIC_HELP}", required=False)

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
        iban_error = iban_problem(data.get("iban", ""))
        if iban_error:
            errors["iban"] = iban_error
        bic_error = bic_problem(data["bic"], data.get("iban", "")) if "bic" in data else None
        if bic_error:
            errors["bic"] = bic_error
        for name in ("sortCode", "accountNumber"):
            if name in data:
                errors[name] = "Not used with type iban."
        if errors:
            raise serializers.ValidationError(errors)
        out = {"type": "iban", "iban": normalise_iban(data["iban"])}
        if "bic" in data:
            out["bic"] = normalise_bic(data["bic"])
        return out


class PayeeSerializer(serializers.Serializer):
    """Inline payee details: `{name, account, accountType?}`."""

    name = SingleLineTextField(max_length=140)
    account = AccountObjectSerializer()
    accountType = StrictChoiceField(choices=["CONSUMER", "BUSINESS"], required=False)
