"""Request bodies and response shapes of the card routes."""

import re
from datetime import date

import pycountry
from django.core.validators import EmailValidator
from django.utils import timezone
from rest_framework import serializers
from rest_framework.settings import api_settings

from authn.serializers import ConfirmationSerializer
from bankapi.http.serializers import (
    InputSerializer,
    SingleLineTextField,
    StrictCharField,
    StrictChoiceField,
    WholeMatchValidator,
)
from bankapi.models import Program
from cards.models import Card

# Embossed on the card: first + last name, as sent, at most this many characters.
EMBOSSED_NAME_MAX = 23
# English letters; single spaces, hyphens or apostrophes only between letters.
NAME_PATTERN = r"^[A-Za-z]+(?:[ '\-][A-Za-z]+)*$"
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
POSTAL_CODE_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9 \-]*[A-Za-z0-9])?$"
COUNTRY_CODES = sorted(country.alpha_2 for country in pycountry.countries)


class NameField(StrictCharField):
    def __init__(self, **kwargs) -> None:
        super().__init__(
            max_length=EMBOSSED_NAME_MAX,
            trim_whitespace=False,
            validators=[
                WholeMatchValidator(
                    NAME_PATTERN,
                    "English letters only; single spaces, hyphens or apostrophes may separate letters.",
                )
            ],
            **kwargs,
        )


class StrictEmailField(StrictCharField):
    openapi = {"format": "email"}

    def __init__(self, **kwargs) -> None:
        super().__init__(max_length=254, validators=[EmailValidator("Must be an e-mail address.")], **kwargs)

    def to_representation(self, value) -> str:
        return value


class PastDateField(StrictCharField):
    """A calendar date, exactly YYYY-MM-DD, before today (UTC)."""

    default_error_messages = {
        **StrictCharField.default_error_messages,
        "date": "Must be a real date written YYYY-MM-DD.",
        "future": "Must be a date in the past.",
    }

    def __init__(self, **kwargs) -> None:
        super().__init__(max_length=10, validators=[WholeMatchValidator(DATE_PATTERN)], **kwargs)

    # drf-stubs pin a CharField's internal value to str; this one parses the text further.
    def to_internal_value(self, data) -> date:  # type: ignore[override]
        text = super().to_internal_value(data)
        if not re.fullmatch(DATE_PATTERN, text, re.ASCII):
            self.fail("date")
        try:
            value = date.fromisoformat(text)
        except ValueError:
            self.fail("date")
        if value >= timezone.now().date():
            self.fail("future")
        return value

    def run_validators(self, value) -> None:
        # The pattern was checked on the text; the value is a date by now.
        return None


class CountryField(StrictChoiceField):
    default_error_messages = {"invalid_choice": "Must be an ISO 3166-1 alpha-2 country code, e.g. GB."}

    def __init__(self, **kwargs) -> None:
        super().__init__(choices=COUNTRY_CODES, **kwargs)


def _address_text(**kwargs) -> SingleLineTextField:
    return SingleLineTextField(max_length=100, **kwargs)


class CardholderAddressSerializer(serializers.Serializer):
    addressLine1 = _address_text()
    addressLine2 = _address_text(required=False, allow_blank=True)
    city = _address_text()
    state = _address_text(required=False, allow_blank=True)
    postalCode = StrictCharField(
        max_length=16,
        validators=[
            WholeMatchValidator(POSTAL_CODE_PATTERN, "Letters and digits, with inner spaces or hyphens.")
        ],
        help_text="Letters and digits, with inner spaces or hyphens, e.g. SW1A 1AA.",
    )
    country = CountryField(help_text="ISO 3166-1 alpha-2, upper case, e.g. GB.")


class CardholderCreateSerializer(InputSerializer):
    """A cardholder on the account. On business programs firstName, lastName, email
    and address are required. firstName and lastName together, as sent, are at most
    23 characters: they are embossed on the card."""

    firstName = NameField(
        required=False,
        help_text="English letters; single spaces, hyphens or apostrophes between letters. "
        "len(firstName) + len(lastName) <= 23. Required on business programs.",
    )
    lastName = NameField(required=False, help_text="Same rules as firstName. Required on business programs.")
    email = StrictEmailField(required=False, help_text="Required on business programs.")
    dateOfBirth = PastDateField(required=False, help_text="YYYY-MM-DD, a real date before today.")
    address = CardholderAddressSerializer(
        required=False,
        help_text="Required on business programs; addressLine1, city, postalCode and country are "
        "required in it.",
    )

    BUSINESS_REQUIRED = ("firstName", "lastName", "email", "address")

    def validate(self, data: dict) -> dict:
        program: Program = self.context["program"]
        errors: dict[str, list[str]] = {}
        if program.account_type == Program.AccountType.BUSINESS:
            for name in self.BUSINESS_REQUIRED:
                if name not in data:
                    errors[name] = ["This field is required on business programs."]
        combined = len(data.get("firstName", "")) + len(data.get("lastName", ""))
        if combined > EMBOSSED_NAME_MAX:
            errors.setdefault(api_settings.NON_FIELD_ERRORS_KEY, []).append(
                f"firstName and lastName together must be at most {EMBOSSED_NAME_MAX} characters "
                f"(they are {combined})."
            )
        if errors:
            raise serializers.ValidationError(errors)
        return data


class CardholderCreatedSerializer(serializers.Serializer):
    success = serializers.BooleanField(default=True)
    cardholderId = serializers.CharField()
    message = serializers.CharField()


class CardSecureInputSerializer(InputSerializer):
    """The step-up confirmation that reveals the card's details."""

    confirmation = ConfirmationSerializer(
        help_text="passkey (after secure/passkey-challenge), totp, or pin where the program offers it."
    )


class CardSecureDetailsSerializer(serializers.Serializer):
    pan = serializers.CharField(help_text="The full card number, 12 to 19 digits.")
    cvv = serializers.CharField(help_text="3 or 4 digits.")
    expiryMonth = serializers.IntegerField(min_value=1, max_value=12)
    expiryYear = serializers.IntegerField(help_text="Four digits, e.g. 2029.")
    nameOnCard = serializers.CharField()


class CardholderInviteSerializer(InputSerializer):
    """A cardholder of the card's account to add to the card."""

    cardholderId = StrictCharField(max_length=64, help_text="As answered by the cardholder create.")


class CardCardholdersSerializer(serializers.Serializer):
    cardId = serializers.CharField()
    cardholderIds = serializers.ListField(
        child=serializers.CharField(), help_text="Every cardholder of the card, oldest first."
    )


class CardSerializer(serializers.Serializer):
    """A card as anything but the secure details shows it: the last four digits only."""

    cardId = serializers.CharField(source="id")
    accountId = serializers.CharField(source="account_id")
    customerId = serializers.CharField(source="account.customer_id")
    status = serializers.ChoiceField(choices=Card.Status.choices)
    lastFour = serializers.CharField(source="last_four", help_text="The last four digits of the card number.")
    expiryMonth = serializers.IntegerField(source="expiry_month", min_value=1, max_value=12)
    expiryYear = serializers.IntegerField(source="expiry_year")
    nameOnCard = serializers.CharField(source="name_on_card")
    cardholderIds = serializers.SerializerMethodField(help_text="The card's cardholders, oldest first.")

    def get_cardholderIds(self, card: Card) -> list[str]:
        return [str(pk) for pk in card.cardholders.order_by("created_at", "id").values_list("id", flat=True)]
