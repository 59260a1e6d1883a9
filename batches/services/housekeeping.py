"""Housekeeping for the daily beat task: what a batch flow no longer needs.

A day after it expires (or, for a challenge, is spent), nothing can use it:
`initiate` challenges are dropped, and an expired draft that was never
submitted keeps its record (its id, status EXPIRED, count and dates stay listed)
but loses its payload: the payments it was sent (payees, account numbers,
references), what verification found, and a file's instructions. A submitted
draft keeps everything: its batch's items and status report read it.
"""

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from batches.models import Draft, ScaChallenge, expired_in_own_time

# How long an expired draft's payload and a spent or expired challenge are kept:
# long enough to look into a complaint about the day before.
KEPT_AFTER_EXPIRY = timedelta(days=1)


def batch_records_purge(now: datetime | None = None) -> dict[str, int]:
    """Two set statements, each safe to run twice or on two workers at once.

    Security and retention read the wall clock; only whether a draft has expired
    is its owner's time (a sandbox's test clock for its customers).
    """
    cutoff = (now or timezone.now()) - KEPT_AFTER_EXPIRY
    challenges, _ = ScaChallenge.objects.filter(
        Q(expires_at__lte=cutoff) | Q(consumed_at__lte=cutoff)
    ).delete()
    # `payments` is NOT NULL: an empty list marks the payload as gone (a draft is
    # never made with no payment). The filter skips drafts already emptied.
    # A test clock's customer's draft expires at its clock's time: it is kept a
    # day of that time after, and at least a day of real time after it was
    # written (an advance may cross its expiry in a second).
    drafts = (
        Draft.objects.filter(
            expired_in_own_time(now, KEPT_AFTER_EXPIRY),
            Q(owner_customer__test_clock__isnull=True) | Q(written_at__lte=cutoff),
            submitted_at__isnull=True,
            payments_count__gt=0,
        )
        .exclude(payments=[])
        .update(payments=[], valid_payments=None, invalid_payments=None, instructions=None)
    )
    return {"challenges": challenges, "draftPayloads": drafts}
