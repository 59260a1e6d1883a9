"""The text formats payments accept, and their parsers.

Every pattern spells digits `[0-9]` and is anchored with `\\A...\\Z`, and is applied
with `fullmatch`: Python's `\\d` also matches Arabic-Indic and other Unicode digits
(which `Decimal` and `int` then read as numbers), and `$` also matches before a
trailing newline. Either would let text through that no client meant as a number
or a date.
"""

import re
import uuid
from datetime import date

AMOUNT = re.compile(r"\A[0-9]+(\.[0-9]{1,2})?\Z")
CURRENCY = re.compile(r"\A[A-Z]{3}\Z")
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
