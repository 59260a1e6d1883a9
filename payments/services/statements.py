"""The rules of a statement's period and of a balance's moment.

A statement covers whole UTC days, `from` to `to`: both are `YYYY-MM-DD`,
`from` ≤ `to` ≤ today, and at most STATEMENT_MAX_DAYS days apart. A balance is
asked for at a moment up to now (an ISO 8601 timestamp; UTC when it names no
offset).
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime

from bankapi.errors import validation_error
from bankapi.formats import ISO_DATE_TIME, iso_date_parse

# `to` − `from`: a statement covers at most 366 days.
STATEMENT_MAX_DAYS = 365


class StatementFormat:
    JSON = "json"
    CAMT053 = "camt053"
    CSV = "csv"
    ALL = (JSON, CAMT053, CSV)


@dataclass(frozen=True)
class StatementPeriod:
    first_day: date
    last_day: date


def _day(field: str, text: str | None) -> date:
    if text is None or text == "":
        raise validation_error(field, f"{field} is required: a day written YYYY-MM-DD (UTC).")
    try:
        return iso_date_parse(text)
    except ValueError:
        raise validation_error(field, f"{field} must be a real calendar day written YYYY-MM-DD.") from None


def statement_period(first: str | None, last: str | None, *, today: date) -> StatementPeriod:
    """The period `from`..`to` (UTC days), or VALIDATION_ERROR naming the field at fault."""
    first_day, last_day = _day("from", first), _day("to", last)
    if last_day > today:
        raise validation_error("to", f"to must be today ({today.isoformat()}, UTC) or earlier.")
    if first_day > last_day:
        raise validation_error("from", "from must be on or before to.")
    if (last_day - first_day).days > STATEMENT_MAX_DAYS:
        raise validation_error(
            "from",
            f"A statement covers at most {STATEMENT_MAX_DAYS + 1} days: to − from ≤ {STATEMENT_MAX_DAYS}.",
        )
    return StatementPeriod(first_day=first_day, last_day=last_day)


def statement_format(text: str | None) -> str:
    if text is None:
        return StatementFormat.JSON
    if text not in StatementFormat.ALL:
        raise validation_error("format", f"format must be one of {', '.join(StatementFormat.ALL)}.")
    return text


def balance_moment(text: str | None, *, now: datetime) -> datetime:
    """The moment `asOf` names (default `now`), in UTC; VALIDATION_ERROR for
    anything but an ISO 8601 timestamp up to `now`."""
    if text is None:
        return now.astimezone(UTC)
    moment = None
    if ISO_DATE_TIME.fullmatch(text):
        try:
            parsed = datetime.fromisoformat(text)
            moment = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
        except (ValueError, OverflowError):
            # Not a calendar moment, or one before year 1 once in UTC.
            moment = None
    if moment is None:
        raise validation_error(
            "asOf",
            "asOf must be an ISO 8601 timestamp such as 2026-01-31T23:59:59Z "
            "(a + in an offset is sent as %2B in a URL).",
        )
    if moment > now:
        raise validation_error("asOf", "asOf must not be in the future.")
    return moment
