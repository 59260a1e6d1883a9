"""The single-line text rule is the Unicode categories Cc, Cf, Zl and Zp, and its
OpenAPI pattern states exactly what the service refuses."""

import re
import sys
import unicodedata

import pytest

from bankapi.formats import (
    LINE_BREAKING_RANGES,
    NONBLANK_SINGLE_LINE_TEXT_PATTERN,
    SINGLE_LINE_TEXT_PATTERN,
    single_line_text_problem,
)
from tests.support.single_line import LINE_BREAKING

CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}


def test_the_ranges_are_the_categories_of_the_unicode_database():
    listed = {code for low, high in LINE_BREAKING_RANGES for code in range(low, high + 1)}
    found = {code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) in CATEGORIES}
    assert listed == found


@pytest.mark.parametrize("character", LINE_BREAKING.values(), ids=LINE_BREAKING.keys())
def test_the_listed_characters_are_refused_by_the_check_and_the_pattern(character):
    text = f"Jane{character}Payee"
    assert single_line_text_problem(text) == (
        f"Must be a single line of text without control or format characters "
        f"(found U+{ord(character):04X} at position 5)."
    )
    assert not re.fullmatch(SINGLE_LINE_TEXT_PATTERN[1:-1], text)


def test_the_pattern_and_the_check_agree_on_every_code_point():
    """Above U+FFFF the pattern leaves the few format characters there to the check
    (and to the fields' descriptions)."""
    pattern = re.compile(SINGLE_LINE_TEXT_PATTERN[1:-1])
    disagreeing = [
        code
        for code in range(sys.maxunicode + 1)
        if not 0xD800 <= code <= 0xDFFF
        and bool(pattern.fullmatch(chr(code))) != (single_line_text_problem(chr(code)) is None)
    ]
    astral = [code for low, high in LINE_BREAKING_RANGES if low > 0xFFFF for code in range(low, high + 1)]
    assert disagreeing == astral


@pytest.mark.parametrize("text", ["Jane Payee", "Zoë", "東京", "a  b", "Ünal-O'Brien", "🙂"])
def test_text_of_any_script_is_single_line(text):
    assert single_line_text_problem(text) is None
    assert re.fullmatch(NONBLANK_SINGLE_LINE_TEXT_PATTERN[1:-1], text)


def test_the_non_blank_pattern_needs_a_character_that_is_not_a_space():
    assert not re.fullmatch(NONBLANK_SINGLE_LINE_TEXT_PATTERN[1:-1], "   ")
    assert re.fullmatch(NONBLANK_SINGLE_LINE_TEXT_PATTERN[1:-1], " x ")


def _serializer_classes(root: type) -> list[type]:
    found, stack = [], [root]
    while stack:
        for subclass in stack.pop().__subclasses__():
            found.append(subclass)
            stack.append(subclass)
    return found


PROJECT_APPS = {
    "bankapi",
    "authn",
    "approvals",
    "audit",
    "batches",
    "cards",
    "events",
    "onboarding",
    "payments",
}


def _fields_of_their_own_pattern() -> dict[str, object]:
    """Every declared field of every serializer the routes use (and any other the
    project defines) that checks a regular expression of its own."""
    from django.core.validators import RegexValidator
    from django.urls import get_resolver
    from rest_framework import serializers

    from bankapi.http.serializers import WholeMatchValidator

    get_resolver().url_patterns  # imports every view, so every serializer  # noqa: B018
    fields = {}
    for serializer in _serializer_classes(serializers.Serializer):
        if serializer.__module__.split(".")[0] not in PROJECT_APPS:
            continue
        for name, field in getattr(serializer, "_declared_fields", {}).items():
            field = getattr(field, "child", field)
            # Django's URL and e-mail validators are regular expressions too, not the project's.
            if any(
                type(validator) in (RegexValidator, WholeMatchValidator) for validator in field.validators
            ):
                fields[f"{serializer.__module__}.{serializer.__qualname__}.{name}"] = field
    return fields


# A webhook URL's own pattern refuses spaces and C0 controls only; events/ is
# outside the change that moved every free-text field to the one rule.
KNOWN_OWN_PATTERNS = {"events.serializers.WebhookEndpointCreateSerializer.url"}


def test_no_field_of_a_pattern_of_its_own_takes_a_line_breaking_character():
    """Free text follows the one single-line rule; a field with a pattern of its own
    (digits, a date, a name in English letters, an enum) must be narrower, never
    wider: the approvals' reject reason took U+202E through a pattern of its own."""
    from rest_framework import serializers

    fields = _fields_of_their_own_pattern()
    assert "approvals.serializers.RejectInputSerializer.reason" not in fields
    wider = set()
    for where, field in fields.items():
        for character in LINE_BREAKING.values():
            for sample in ("a{}a", "A{}A", "1{}1", "https://example.com/{}x", "2026-01-01{}"):
                text = sample.format(character)
                try:
                    field.run_validation(text)
                except serializers.ValidationError:
                    continue
                wider.add(where)
    assert wider == KNOWN_OWN_PATTERNS
