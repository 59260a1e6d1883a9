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
