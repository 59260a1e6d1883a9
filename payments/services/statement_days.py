"""Storing the lines of closed statement days ahead of any statement.

A statement stores the closed days it writes (`StatementDay`, see
`payments.selectors.ledger.account_statement`), so only the first statement
covering a day writes it from the ledger. The periodic run here stores the day
before `today` for every account that has booked since 00:00 UTC of `today`
(so that day is closed), in every format, before anyone asks: after a year of
runs, even the first statement of a year reads stored pieces only (today's
lines aside). It also fills the days since the account's last stored day (the
days it booked nothing, or a run missed), at most a statement's longest
period back.
"""

from datetime import date, timedelta

from django.db.models import Exists, Max, OuterRef

from bankapi.models import Account
from payments.models import StatementDay
from payments.selectors.ledger import account_statement, day_start
from payments.services.statements import STATEMENT_MAX_DAYS
from payments.statement_formats import LAYOUTS

# Accounts read per query.
ACCOUNTS_CHUNK = 200


def statement_days_store(today: date) -> int:
    """Store the closed days up to the day before `today` of the accounts that
    have booked since 00:00 UTC of `today` and have not stored that day yet, in
    each format: the number of (account, format) stored. Safe to run twice, or
    beside statements storing the same days (each day is inserted once)."""
    yesterday = today - timedelta(days=1)
    earliest = today - timedelta(days=STATEMENT_MAX_DAYS)
    stored = 0
    for layout in LAYOUTS:
        done = StatementDay.objects.filter(account_id=OuterRef("id"), layout=layout.key, day=yesterday)
        ids = list(
            Account.objects.filter(last_booked_at__gte=day_start(today))
            .exclude(Exists(done))
            .order_by("id")
            .values_list("id", flat=True)
        )
        for begin in range(0, len(ids), ACCOUNTS_CHUNK):
            chunk = ids[begin : begin + ACCOUNTS_CHUNK]
            latest = dict(
                StatementDay.objects.filter(account_id__in=chunk, layout=layout.key)
                .values("account_id")
                .annotate(day=Max("day"))
                .values_list("account_id", "day")
            )
            # Each account read now: its latest booking time says which days are closed.
            for account in Account.objects.filter(id__in=chunk).order_by("id"):
                last = latest.get(account.id)
                first = yesterday if last is None else max(last + timedelta(days=1), earliest)
                if first <= yesterday:
                    account_statement(account, first, yesterday, layout)
                    stored += 1
    return stored
