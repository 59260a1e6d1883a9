"""Serializer building blocks shared by every app.

JSON types are checked strictly: DRF would otherwise turn `123` into `"123"` or
`"yes"` into `True`, and a bank API should tell the caller its body is wrong.
"""

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be an integer."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    default_error_messages = {"invalid_choice": "Must be one of: {choices}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in self.choices:
            self.fail("invalid_choice", choices=", ".join(map(str, self.choices)))
        return data


class StrictListField(serializers.ListField):
    default_error_messages = {"not_a_list": "Must be an array."}


class InputSerializer(serializers.Serializer):
    """Base for request bodies.

    Program and environment come from the token (spec section 1), so a body that
    tries to name them is refused rather than silently ignored.
    """

    forbidden_fields: tuple[str, ...] = ("programId", "sandbox")

    def to_internal_value(self, data: Any) -> dict:
        if isinstance(data, dict):
            sent = [name for name in self.forbidden_fields if name in data]
            if sent:
                raise serializers.ValidationError(
                    {name: ["Must not be sent; it comes from the bearer token."] for name in sent}
                )
        return super().to_internal_value(data)
