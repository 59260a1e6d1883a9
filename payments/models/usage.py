"""What each account has sent per UTC day, for the daily outbound limit."""

from django.db import models
from django.db.models import Q

from bankapi.models import MONEY, ZERO, Account


class DailyOutboundUsage(models.Model):
    """The debit amounts (fee excluded) of the payments accepted from one account
    on one UTC day that have not failed since: what the account's daily outbound
    limit is checked against.

    Kept by the acceptance transaction under the account's lock (and given back
    by a failure's reversal), so a payment reads and updates one row instead of
    summing the day's payments: its cost stays flat as the day fills. Internal
    bookkeeping, never shown to callers; its tenant is its account's.
    """

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    total = models.DecimalField(**MONEY, default=ZERO)

    class Meta:
        verbose_name_plural = "daily outbound usage"
        constraints = [
            models.UniqueConstraint(fields=["account", "day"], name="daily_outbound_usage_per_day"),
            models.CheckConstraint(condition=Q(total__gte=0), name="daily_outbound_usage_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.account_id} {self.day}: {self.total}"
