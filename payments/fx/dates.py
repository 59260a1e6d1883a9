"""Value dates of FX quotes.

Business days are Monday to Friday. There is no holiday calendar: a bank holiday
counts as a business day (a real provider would apply the calendars of both
currencies).
"""

from datetime import date, timedelta

from payments.models import FxQuote


def is_business_day(day: date) -> bool:
    return day.weekday() < 5


def next_business_day(day: date) -> date:
    """The first business day after `day`."""
    day += timedelta(days=1)
    while not is_business_day(day):
        day += timedelta(days=1)
    return day


def value_date_for(tenor: str, today: date) -> date:
    """ON: today; TN: the next business day; SPOT: two business days after today.

    Nothing settles on a weekend, so ON asked on a Saturday or Sunday values on
    the next business day (the same day as TN then).
    """
    if tenor == FxQuote.Tenor.ON:
        return today if is_business_day(today) else next_business_day(today)
    if tenor == FxQuote.Tenor.TN:
        return next_business_day(today)
    if tenor == FxQuote.Tenor.SPOT:
        return next_business_day(next_business_day(today))
    raise ValueError(f"Unknown tenor {tenor!r}")
