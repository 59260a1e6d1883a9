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
