"""Scheduled payments and their runs: one run record per (schedule, day)."""

from django.db import models
from django.db.models import Q

from bankapi.ids import write_ordered_uuid
from bankapi.models import MONEY, Account, Customer, TenantOwned
from payments.models.beneficiary import Beneficiary


class ScheduledPayment(TenantOwned):
    """A payment to make on a later UTC day, once or repeatedly.

    The series is anchored on `scheduled_date`: run n falls on the anchor plus n
    periods (for MONTHLY, n months on the anchor's day of month, or the month's
    last day where that day is missing), so a month-end clamp never drifts the
    series. `occurrence` is n for the next run; `next_run_date` caches its date for
    the due query and is null once the schedule has ended.
    """

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE", "Active"
        CANCELLED = "CANCELLED", "Cancelled"
        COMPLETED = "COMPLETED", "Completed"

    class Frequency(models.TextChoices):
        NEVER = "NEVER", "Once"
        DAILY = "DAILY", "Daily"
        WEEKLY = "WEEKLY", "Weekly"
        FORTNIGHTLY = "FORTNIGHTLY", "Fortnightly"
        MONTHLY = "MONTHLY", "Monthly"

    # Write-ordered: a clock customer's rows share the clock's time, and lists break ties by id.
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="scheduled_payments")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="scheduled_payments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    frequency = models.CharField(max_length=12, choices=Frequency.choices, default=Frequency.NEVER)
    scheduled_date = models.DateField()
    occurrence = models.PositiveIntegerField(default=0)
    next_run_date = models.DateField(null=True, blank=True)
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    reference = models.CharField(max_length=140)
    beneficiary = models.ForeignKey(
        Beneficiary, null=True, blank=True, on_delete=models.PROTECT, related_name="scheduled_payments"
    )
    # The rest of the instruction: purpose, chargeBearer, payee (inline), virtualIban, feeWaived.
    details = models.JSONField(default=dict)
    last_run = models.ForeignKey(
        "ScheduleRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(fields=["status", "next_run_date"]),
            models.Index(fields=["account", "created_at"]),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="schedule_amount_positive"),
            models.CheckConstraint(
                condition=Q(status="ACTIVE", next_run_date__isnull=False)
                | (~Q(status="ACTIVE") & Q(next_run_date__isnull=True)),
                name="schedule_next_run_only_when_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.amount} {self.currency} {self.frequency} from {self.scheduled_date} ({self.status})"


class ScheduleRun(models.Model):
    """What happened on one run date of a schedule. Unique per (schedule, run
    date): whatever runs the schedules twice, a day is paid at most once."""

    class Outcome(models.TextChoices):
        PAID = "PAID", "Payment accepted"
        HELD = "HELD", "Payment accepted, held for compliance review"
        FAILED = "FAILED", "Stopped before acceptance"

    id = models.BigAutoField(primary_key=True)
    schedule = models.ForeignKey(ScheduledPayment, on_delete=models.CASCADE, related_name="runs")
    run_date = models.DateField()
    outcome = models.CharField(max_length=6, choices=Outcome.choices)
    payment_request = models.OneToOneField(
        "PaymentRequest", null=True, blank=True, on_delete=models.PROTECT, related_name="schedule_run"
    )
    reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule", "run_date"], name="schedule_run_once_per_day")
        ]

    def __str__(self) -> str:
        return f"{self.run_date} {self.outcome}"
