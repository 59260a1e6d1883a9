"""Approval policies and the approvals they ask for.

A policy belongs to one customer (of a business program) or one custodian. An
approval is one held request: the content its approvers sign (and the hash of
its canonical JSON), what running it takes (`replay`), and its signatures.
"""

import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from bankapi.ids import write_ordered_uuid
from bankapi.models import Custodian, Customer, TenantOwned

DEFAULT_EXPIRES_AFTER_HOURS = 168
MAX_APPROVERS = 3
AMOUNT_PATTERN = r"^[0-9]+\.[0-9]{2}$"


def tiers_errors(tiers: Any) -> list[str]:
    """What is wrong with a policy's tiers (empty: nothing): a list of
    `{"minAmount": "<digits>.<2 digits>", "approvers": 1..3}`, distinct minAmounts."""
    if not isinstance(tiers, list):
        return ["Tiers must be a list."]
    errors: list[str] = []
    seen: set[Decimal] = set()
    for index, tier in enumerate(tiers):
        if not isinstance(tier, dict) or set(tier) != {"minAmount", "approvers"}:
            errors.append(f"Tier {index}: exactly minAmount and approvers.")
            continue
        amount, approvers = tier["minAmount"], tier["approvers"]
        try:
            value = Decimal(amount) if isinstance(amount, str) else None
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value < 0 or value.as_tuple().exponent != -2:
            errors.append(f"Tier {index}: minAmount is a decimal string with two decimals, e.g. 20000.00.")
        elif value in seen:
            errors.append(f"Tier {index}: another tier has this minAmount.")
        else:
            seen.add(value)
        if (
            isinstance(approvers, bool)
            or not isinstance(approvers, int)
            or not 1 <= approvers <= MAX_APPROVERS
        ):
            errors.append(f"Tier {index}: approvers is 1 to {MAX_APPROVERS}.")
    return errors


class ApprovalPolicy(TenantOwned):
    """Who must approve money leaving a customer or a custodian, and how."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    customer = models.OneToOneField(
        Customer, null=True, blank=True, on_delete=models.CASCADE, related_name="approval_policy"
    )
    custodian = models.OneToOneField(
        Custodian, null=True, blank=True, on_delete=models.CASCADE, related_name="approval_policy"
    )
    tiers = models.JSONField(
        default=list,
        blank=True,
        help_text='A list of {"minAmount": "20000.00", "approvers": 1}: the highest tier whose '
        "minAmount the amount reaches applies; approvers (1 to 3) other users must approve.",
    )
    expires_after_hours = models.PositiveIntegerField(default=DEFAULT_EXPIRES_AFTER_HOURS)
    passkey_required = models.BooleanField(
        default=True, help_text="Off: an authenticator-app (TOTP) code may approve too."
    )

    class Meta:
        verbose_name_plural = "approval policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(customer__isnull=True) ^ Q(custodian__isnull=True),
                name="approval_policy_one_owner",
            ),
        ]

    def __str__(self) -> str:
        return f"Approval policy of {self.customer or self.custodian}"

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        if tier_errors := tiers_errors(self.tiers):
            errors["tiers"] = tier_errors
        if self.expires_after_hours < 1:
            errors["expires_after_hours"] = "At least one hour."
        if (self.customer_id is None) == (self.custodian_id is None):
            errors["customer"] = "A policy belongs to exactly one customer or one custodian."
        owner = self.customer or self.custodian
        if owner is not None and (owner.program_id != self.program_id or owner.sandbox != self.sandbox):
            errors["program"] = "The policy's program and environment are its owner's."
        if errors:
            raise ValidationError(errors)

    def required_for(self, totals: dict[str, Decimal]) -> int:
        """Approvers the highest tier reached by any currency's total asks (0: none)."""
        required = 0
        best = Decimal(-1)
        for tier in self.tiers:
            minimum = Decimal(tier["minAmount"])
            if minimum > best and any(total >= minimum for total in totals.values()):
                best, required = minimum, int(tier["approvers"])
        return required


class Approval(TenantOwned):
    class Status(models.TextChoices):
        PENDING_APPROVAL = "PENDING_APPROVAL"
        EXECUTED = "EXECUTED"
        FAILED = "FAILED"
        REJECTED = "REJECTED"
        EXPIRED = "EXPIRED"

    class Kind(models.TextChoices):
        PAYMENT = "payment"
        SCHEDULE = "schedule"
        BATCH = "batch"

    # Write-ordered: a clock customer's rows share the clock's time, and lists break ties by id.
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING_APPROVAL)
    # Whose policy held it: the customer's, or the custodian's.
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    custodian = models.ForeignKey(
        Custodian, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    initiator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    required = models.PositiveSmallIntegerField()
    passkey_required = models.BooleanField()
    content = models.JSONField()
    content_hash = models.CharField(max_length=64)
    # What running the request takes (the route's parsed request, in the domain's names).
    replay = models.JSONField()
    expires_at = models.DateTimeField()
    result = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reject_reason = models.TextField(blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["customer", "created_at"]),
            models.Index(fields=["custodian", "created_at"]),
            models.Index(fields=["status", "expires_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(customer__isnull=True) ^ Q(custodian__isnull=True), name="approval_one_owner"
            ),
        ]

    def __str__(self) -> str:
        return f"Approval {self.id} ({self.status})"


class ApprovalSignature(models.Model):
    """One user's approval: how, when, and for a passkey the assertion as sent
    (base64url), so anyone can check later what was signed."""

    class Method(models.TextChoices):
        PASSKEY = "passkey"
        TOTP = "totp"

    approval = models.ForeignKey(Approval, on_delete=models.CASCADE, related_name="signatures")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    method = models.CharField(max_length=10, choices=Method.choices)
    approved_at = models.DateTimeField()
    passkey = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["approval", "user"], name="approval_signature_once_per_user"),
        ]

    def __str__(self) -> str:
        return f"Signed by {self.user} with {self.method_text()}"

    def method_text(self) -> str:
        return {"passkey": "a passkey", "totp": "an authenticator code"}.get(self.method, self.method)
