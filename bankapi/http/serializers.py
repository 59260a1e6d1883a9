"""Serializer building blocks shared by every app.

JSON types are checked strictly: DRF would otherwise turn `123` into `"123"` or
`"yes"` into `True`, and a bank API should tell the caller its body is wrong.
"""

import re
import threading
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from rest_framework import serializers

from bankapi.formats import (
    NONBLANK_SINGLE_LINE_TEXT_PATTERN,
    SINGLE_LINE_TEXT_PATTERN,
    SINGLE_LINE_TEXT_RULE,
    single_line_text_problem,
)


class WholeMatchValidator(RegexValidator):
    """Django's RegexValidator, matched against the whole text (`fullmatch`).

    RegexValidator uses `re.search`, and `$` also matches before a final newline,
    so `^[A-Za-z]+$` takes "John\n". The pattern stays written `^...$`, which is
    what the OpenAPI document (ECMA-262, where `$` is the end) states.
    """

    regex: re.Pattern[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.inverse_match:
            raise TypeError("WholeMatchValidator states what the text is; it takes no inverse_match.")

    def __call__(self, value: Any) -> None:
        if not self.regex.fullmatch(str(value)):
            raise ValidationError(self.message, code=self.code, params={"value": value})


def _states_a_pattern(field: serializers.CharField) -> bool:
    openapi = getattr(field, "openapi", None) or {}
    return (
        "pattern" in openapi
        or "enum" in openapi
        or any(isinstance(v, RegexValidator) for v in field.validators)
    )


def _check_as_sent(field: serializers.CharField, trim_whitespace: object) -> None:
    """Text checked against a pattern is checked as sent, never trimmed: a value
    with a newline or spaces around it is refused rather than quietly changed."""
    if not _states_a_pattern(field):
        return
    if trim_whitespace is True:
        raise TypeError(f"{type(field).__name__} states a pattern: its text is checked as sent, not trimmed.")
    if any(
        isinstance(v, RegexValidator) and not isinstance(v, WholeMatchValidator) for v in field.validators
    ):
        raise TypeError(
            f"{type(field).__name__}: use WholeMatchValidator, RegexValidator lets a newline through."
        )
    field.trim_whitespace = False


class StrictCharField(serializers.CharField):
    """A JSON string.

    `openapi` adds keywords to the field's schema in the OpenAPI document (e.g. a
    `pattern` or `format`) for rules the serializer checks in code, so a client
    generated from the document knows them too. A field stating a pattern (there
    or with a `WholeMatchValidator`) checks its text as sent: it is not trimmed.
    """

    default_error_messages = {"invalid": "Must be a string."}
    openapi: dict[str, Any] | None = None

    def __init__(self, *, openapi: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if openapi is not None:
            self.openapi = {**(self.openapi or {}), **openapi}
        _check_as_sent(self, kwargs.get("trim_whitespace"))

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class SingleLineTextField(StrictCharField):
    """Single-line free text (a name, a reference, a description, an address line):
    no character of the Unicode categories Cc, Cf, Zl or Zp (the one rule of
    `bankapi.formats.single_line_text_problem`), stated as a `pattern` in the
    OpenAPI document. Checked as sent, never trimmed; unless blank is allowed,
    text of whitespace alone is blank, as a trimmed field would find it (a
    field whose length rules say the rest, a statement reference, passes
    `spaces_are_blank=False`)."""

    def __init__(self, *, spaces_are_blank: bool = True, **kwargs: Any) -> None:
        help_text = kwargs.pop("help_text", "")
        kwargs["help_text"] = f"{help_text} {SINGLE_LINE_TEXT_RULE}".strip()
        super().__init__(trim_whitespace=False, **kwargs)
        self.spaces_are_blank = spaces_are_blank and not self.allow_blank
        pattern = NONBLANK_SINGLE_LINE_TEXT_PATTERN if self.spaces_are_blank else SINGLE_LINE_TEXT_PATTERN
        self.openapi = {"pattern": pattern, **(self.openapi or {})}

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        problem = single_line_text_problem(text)
        if problem:
            raise serializers.ValidationError(problem, code="single_line")
        if self.spaces_are_blank and not text.strip():
            self.fail("blank")
        return text


class RegexField(serializers.RegexField):
    """DRF's RegexField, matching the whole text as sent (see WholeMatchValidator),
    with `openapi` keywords as StrictCharField takes them (a narrower `pattern` or
    a `format` for what the serializer checks in code)."""

    def __init__(self, regex: Any, *, openapi: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(regex, **kwargs)
        self.validators = [
            WholeMatchValidator(v.regex, message=v.message) if type(v) is RegexValidator else v
            for v in self.validators
        ]
        self.openapi = openapi
        _check_as_sent(self, kwargs.get("trim_whitespace"))


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

    def __init__(self, *, openapi: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.openapi = openapi


def unknown_fields(serializer: serializers.Serializer, data: Any) -> dict[str, Any]:
    """The keys of `data` that `serializer` does not take, as a DRF error detail.

    Nested serializers are walked (one object or a list of them), so a misspelt
    key inside `payee.account` is named as such. A nested `InputSerializer`
    checks its own keys when DRF validates it.
    """
    if not isinstance(data, dict):
        return {}
    fields = {name: field for name, field in serializer.fields.items() if not field.read_only}
    errors: dict[str, Any] = {name: ["Unknown field."] for name in data if name not in fields}
    for name, field in fields.items():
        if name not in data:
            continue
        many = isinstance(field, serializers.ListSerializer | serializers.ListField)
        child: Any = getattr(field, "child", None) if many else field
        if not isinstance(child, serializers.Serializer) or isinstance(child, InputSerializer):
            continue
        if many:
            items = data[name] if isinstance(data[name], list) else []
            nested_list = {index: unknown_fields(child, item) for index, item in enumerate(items)}
            nested_list = {index: detail for index, detail in nested_list.items() if detail}
            if nested_list:
                errors[name] = nested_list
        else:
            nested = unknown_fields(child, data[name])
            if nested:
                errors[name] = nested
    return errors


# Per thread: the instances `InputSerializer.checked` reuses.
_KEPT = threading.local()


class InputSerializer(serializers.Serializer):
    """Base for request bodies.

    Program and environment come from the token, so a body that tries to name
    them is refused rather than silently ignored. So is any other key the
    serializer does not take, at any depth: a misspelt optional field (say
    `feeWaivd`) must not pass unnoticed as if it had not been sent.
    """

    forbidden_fields: tuple[str, ...] = ("programId", "sandbox")
    # Rules between keys that the subclass's `validate` checks, for the OpenAPI
    # document (AutoSchema states them as one `not`): the keys of which a body sends
    # exactly one, and JSON Schemas of the bodies refused whatever their values.
    exactly_one_of: tuple[str, ...] = ()
    refused_combinations: tuple[dict[str, Any], ...] = ()

    @classmethod
    def checked(cls, data: Any, context: dict[str, Any] | None = None) -> dict:
        """The validated data of `data`, or the ValidationError (400) of
        `is_valid(raise_exception=True)`: the same rules, answers and document.

        For the hottest routes. Making a serializer copies every declared field
        (nested serializers' fields too) before anything is checked, several
        times the cost of checking a body; here each thread keeps one instance
        per class with its fields made once, and only the body and the context
        change from one call to the next (fields keep no state of a body: what a
        run found lives on the serializer, and is cleared here first)."""
        kept: dict[type, InputSerializer] = _KEPT.__dict__.setdefault("serializers", {})
        serializer = kept.get(cls)
        if serializer is None:
            serializer = kept[cls] = cls()
            serializer.fields  # noqa: B018 (made now, once)
        serializer._context = context or {}
        serializer.initial_data = data
        try:
            serializer.is_valid(raise_exception=True)
            validated: dict = serializer.validated_data
            return validated
        finally:
            for found in ("_validated_data", "_errors", "_data", "initial_data"):
                serializer.__dict__.pop(found, None)
            serializer._context = {}

    def to_internal_value(self, data: Any) -> dict:
        if isinstance(data, dict):
            sent = [name for name in self.forbidden_fields if name in data]
            if sent:
                raise serializers.ValidationError(
                    {name: ["Must not be sent; it comes from the bearer token."] for name in sent}
                )
            unknown = unknown_fields(self, data)
            if unknown:
                raise serializers.ValidationError(unknown)
        validated: dict[str, Any] = super().to_internal_value(data)
        return validated


# Response fields: each response shape has one source, the serializer the OpenAPI
# document is generated from, which also renders the body from the domain objects.


class MoneyField(serializers.CharField):
    """An amount out: a decimal string with exactly two places (`"10.00"`)."""

    # A CharField for the document (a string); it renders a Decimal, not a str.
    def to_representation(self, value: Decimal) -> str:  # type: ignore[override]
        return f"{value:.2f}"


class TimestampField(serializers.DateTimeField):
    """A moment out, written as `datetime.isoformat()` writes it (`+00:00` offset)."""

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


class OptionalTextField(serializers.CharField):
    """Text out, null when empty."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def to_representation(self, value: str) -> str | None:  # type: ignore[override]  # null out
        return value or None


class ConstantField(serializers.CharField):
    """A field whose value is always the same text (such as `status: "success"`)."""

    def __init__(self, value: str, **kwargs: Any) -> None:
        self.value = value
        super().__init__(**kwargs)

    def get_attribute(self, instance: Any) -> str:
        return self.value


def validated_body(serializer_class: type[serializers.Serializer], request: Any, **context: Any) -> Any:
    """The request body as `serializer_class` validates it (with `context`); a
    body it refuses raises, and the exception handler answers 400 VALIDATION_ERROR."""
    body = serializer_class(data=request.data, context=context)
    body.is_valid(raise_exception=True)
    return body.validated_data
