"""The text formats the API accepts (days, times, ids), and their parsers. A
payment's amount is `payments.formats`.

Every pattern spells digits `[0-9]` and is anchored with `\\A...\\Z`, and is applied
with `fullmatch`: Python's `\\d` also matches Arabic-Indic and other Unicode digits
(which `Decimal` and `int` then read as numbers), and `$` also matches before a
trailing newline. Either would let text through that no client meant as a number
or a date.
"""

import re
import uuid
from datetime import date

# A YYYY-MM-DD day of the calendar (0001-01-01 to 9999-12-31, 29 February in leap
# years only), for the OpenAPI document: what `date.fromisoformat` takes.
_YEAR = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
CALENDAR_DAY = (
    f"({_YEAR}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    f"|02-(0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)"
)
CALENDAR_DAY_PATTERN = f"^{CALENDAR_DAY}$"
ISO_DATE = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
# RFC 3339-style: date, `T` (or a space), hh:mm[:ss[.fraction]], then optionally
# `Z` or an offset of at most 23:59 (+hh, +hhmm or +hh:mm).
ISO_DATE_TIME = re.compile(
    r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?"
    r"(Z|[+-]([01][0-9]|2[0-3])(:?[0-5][0-9])?)?\Z"
)
UUID = re.compile(r"\A[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def iso_date_parse(text: str) -> date:
    """`YYYY-MM-DD` as a date; ValueError for any other text or a day not in the calendar."""
    if not ISO_DATE.fullmatch(text):
        raise ValueError(f"Not a YYYY-MM-DD date: {text!r}")
    return date.fromisoformat(text)


def uuid_parse(text: str) -> uuid.UUID:
    """A UUID in its canonical 8-4-4-4-12 hex form (either case); ValueError otherwise.

    `uuid.UUID` alone also takes braces, `urn:uuid:`, missing hyphens, underscores
    and non-ASCII digits, so two different strings could name one key.
    """
    if not UUID.fullmatch(text):
        raise ValueError(f"Not a UUID: {text!r}")
    return uuid.UUID(text)


# Single-line free text (names, payee names, references and remittance lines,
# descriptions, address lines): no character of the Unicode categories Cc (C0 and
# C1 controls: tab, newline and U+0085 included), Cf (format characters: bidi
# embeddings, overrides and isolates, zero-width characters, U+FEFF), Zl (U+2028)
# or Zp (U+2029). Such a character splits a line where a reader of a statement,
# a file or a log would not see one, or shows the text in another order than it
# was written. The ranges of those categories as of Unicode 14.0 (tests check them
# against `unicodedata`).
LINE_BREAKING_RANGES = (
    (0x0000, 0x001F),
    (0x007F, 0x009F),
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)


def _class_items(low: int, high: int) -> str:
    """A range as regular expression class items, `\\uXXXX` escapes that Python and
    ECMA-262 read alike."""
    return f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}"


# For the OpenAPI document, the characters of the Basic Multilingual Plane only: the
# few format characters above it (U+110BD, U+110CD, U+13430-13438, U+1BCA0-1BCA3,
# U+1D173-1D17A, the tags U+E0001 and U+E0020-E007F) are refused all the same, as
# the fields' descriptions say. Written above it (a character each, as an engine
# without the `u` flag needs), they made the pattern too big for the fuzzer's
# regular expression engine once combined with a maximum length.
_LINE_BREAKING_BMP = "".join(_class_items(low, high) for low, high in LINE_BREAKING_RANGES if high <= 0xFFFF)
# Any text without those characters, and one with a character that is not
# whitespace (a required field that is not blank).
SINGLE_LINE_TEXT_PATTERN = f"^[^{_LINE_BREAKING_BMP}]*$"
NONBLANK_SINGLE_LINE_TEXT_PATTERN = (
    f"^[^{_LINE_BREAKING_BMP}]*[^\\s{_LINE_BREAKING_BMP}][^{_LINE_BREAKING_BMP}]*$"
)
SINGLE_LINE_TEXT_RULE = (
    "A single line of text: no control or format character (Unicode categories Cc, Cf, Zl, "
    "Zp), such as tab, newline, U+0085, bidi overrides and isolates, zero-width characters or "
    "U+FEFF."
)
_LINE_BREAKING_CHARACTER = re.compile(
    "["
    + "".join(
        re.escape(chr(low)) + ("" if low == high else "-" + re.escape(chr(high)))
        for low, high in LINE_BREAKING_RANGES
    )
    + "]"
)


def single_line_text_problem(text: str) -> str | None:
    """Why `text` is not single-line free text (naming the first character that is
    not allowed), or None."""
    found = _LINE_BREAKING_CHARACTER.search(text)
    if found is None:
        return None
    return (
        f"Must be a single line of text without control or format characters "
        f"(found U+{ord(found.group()):04X} at position {found.start() + 1})."
    )
