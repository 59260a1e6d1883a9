"""The dates of a schedule's series: month ends, leap years, every frequency."""

from datetime import date

import pytest

from payments.services.schedule_rules import occurrence_date


def series(anchor: date, frequency: str, count: int) -> list[date]:
    return [occurrence_date(anchor, frequency, n) for n in range(count)]


@pytest.mark.parametrize(
    ("anchor", "expected"),
    [
        # The 31st: the last day of shorter months, then back to the 31st.
        (
            date(2026, 1, 31),
            [date(2026, 1, 31), date(2026, 2, 28), date(2026, 3, 31), date(2026, 4, 30), date(2026, 5, 31)],
        ),
        # Leap year: 29 February.
        (date(2028, 1, 31), [date(2028, 1, 31), date(2028, 2, 29), date(2028, 3, 31)]),
        (date(2028, 1, 29), [date(2028, 1, 29), date(2028, 2, 29), date(2028, 3, 29)]),
        (date(2026, 1, 29), [date(2026, 1, 29), date(2026, 2, 28), date(2026, 3, 29)]),
        # Across the year end.
        (
            date(2026, 11, 30),
            [date(2026, 11, 30), date(2026, 12, 30), date(2027, 1, 30), date(2027, 2, 28), date(2027, 3, 30)],
        ),
        # 29 February itself: the 29th where it exists, else the month's last day.
        (date(2028, 2, 29), [date(2028, 2, 29), date(2028, 3, 29)]),
    ],
)
def test_monthly_keeps_the_day_of_month_or_the_months_last_day(anchor, expected):
    assert series(anchor, "MONTHLY", len(expected)) == expected


def test_monthly_from_29_february_falls_on_28_february_a_year_later():
    assert occurrence_date(date(2028, 2, 29), "MONTHLY", 12) == date(2029, 2, 28)
    assert occurrence_date(date(2028, 2, 29), "MONTHLY", 48) == date(2032, 2, 29)


@pytest.mark.parametrize(
    ("anchor", "frequency", "expected"),
    [
        ("2026-01-30", "DAILY", ["2026-01-30", "2026-01-31", "2026-02-01"]),
        ("2028-02-28", "DAILY", ["2028-02-28", "2028-02-29", "2028-03-01"]),
        ("2026-02-28", "DAILY", ["2026-02-28", "2026-03-01"]),
        ("2026-12-31", "DAILY", ["2026-12-31", "2027-01-01"]),
        ("2026-01-28", "WEEKLY", ["2026-01-28", "2026-02-04", "2026-02-11"]),
        ("2028-02-26", "WEEKLY", ["2028-02-26", "2028-03-04"]),
        ("2026-02-26", "WEEKLY", ["2026-02-26", "2026-03-05"]),
        ("2028-02-20", "FORTNIGHTLY", ["2028-02-20", "2028-03-05", "2028-03-19"]),
        ("2026-02-20", "FORTNIGHTLY", ["2026-02-20", "2026-03-06"]),
        ("2026-12-25", "FORTNIGHTLY", ["2026-12-25", "2027-01-08"]),
    ],
)
def test_daily_weekly_and_fortnightly_step_across_month_and_year_ends(anchor, frequency, expected):
    assert series(date.fromisoformat(anchor), frequency, len(expected)) == [
        date.fromisoformat(d) for d in expected
    ]


def test_a_one_off_has_a_single_date():
    assert series(date(2026, 5, 1), "NEVER", 2) == [date(2026, 5, 1), None]
