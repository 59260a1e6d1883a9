"""Events (an outbox written with the change that caused them) and webhook endpoints.

An event row is written in the same transaction as the change it reports, so it
exists if and only if that change committed. Deliveries to webhook endpoints are
made afterwards from these rows, at least once, in order per resource.
"""

import uuid

from django.db import models

from bankapi.crypto import EncryptedTextField
from bankapi.models import Custodian, Customer, TenantOwned
from bankapi.ops.logs import REQUEST_ID_MAX_LENGTH


class EventType(models.TextChoices):
    PAYMENT_REQUEST_ACCEPTED = "payment_request.accepted"
    PAYMENT_REQUEST_HELD = "payment_request.held"
    PAYMENT_REQUEST_APPROVED = "payment_request.approved"
    PAYMENT_REQUEST_SETTLED = "payment_request.settled"
    PAYMENT_REQUEST_FAILED = "payment_request.failed"
    PAYMENT_REQUEST_RETURNED = "payment_request.returned"
    SCHEDULED_PAYMENT_RUN_SUCCEEDED = "scheduled_payment.run_succeeded"
    SCHEDULED_PAYMENT_RUN_FAILED = "scheduled_payment.run_failed"
    SCHEDULED_PAYMENT_COMPLETED = "scheduled_payment.completed"
    BATCH_FUNDED = "batch.funded"
    BATCH_FUNDING_FAILED = "batch.funding_failed"
    BATCH_COMPLETED = "batch.completed"
    BATCH_PARTIALLY_FAILED = "batch.partially_failed"
    BATCH_FAILED = "batch.failed"
    APPLICATION_STAGE_CHANGED = "application.stage_changed"
    APPLICATION_VERIFICATION_UPDATED = "application.verification_updated"
    CARD_ISSUED = "card.issued"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_APPROVED = "approval.approved"
    APPROVAL_EXECUTED = "approval.executed"
    APPROVAL_FAILED = "approval.failed"
    APPROVAL_REJECTED = "approval.rejected"
    APPROVAL_EXPIRED = "approval.expired"
    INCOMING_PAYMENT_RECEIVED = "incoming_payment.received"
    CARD_AUTHORIZATION_CREATED = "card_authorization.created"
    CARD_AUTHORIZATION_CLEARED = "card_authorization.cleared"
    CARD_AUTHORIZATION_REVERSED = "card_authorization.reversed"
    CARD_AUTHORIZATION_EXPIRED = "card_authorization.expired"


class Event(TenantOwned):
    # The integer key orders events as they were written: deliveries of one
    # resource go out in this order.
    id = models.BigAutoField(primary_key=True)
    event_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    type = models.CharField(max_length=64, choices=EventType.choices)
    # Who may see it: the customer it concerns, and the custodian for its batches.
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    custodian = models.ForeignKey(
        Custodian, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    resource_type = models.CharField(max_length=40)
    resource_id = models.CharField(max_length=64)
    data = models.JSONField()
    # Set once its deliveries exist (one per subscribed endpoint). Writing the
    # event costs the change one INSERT; the fan-out happens after commit.
    fanned_out = models.BooleanField(default=False)
    # The `X-Request-Id` of the request whose change wrote it (a task that request
    # queued counts as that request; None when no request did: a beat job, a
    # command). Its fan-out and deliveries log under this id, so an operator can
    # follow a request to its webhooks. Internal: not in the API or the payloads.
    request_id = models.CharField(max_length=REQUEST_ID_MAX_LENGTH, null=True, blank=True, editable=False)
    # The real time it was written: the outbox's age and the fan-out sweep's
    # grace read it. `created_at` is its customer's time (a test clock's, for
    # a clock's customers), which says nothing of how long it has waited.
    written_at = models.DateTimeField(auto_now_add=True, editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["program", "sandbox", "created_at"]),
            models.Index(fields=["customer", "created_at"]),
            models.Index(fields=["custodian", "created_at"]),
            models.Index(fields=["resource_type", "resource_id", "id"]),
            models.Index(fields=["id"], condition=models.Q(fanned_out=False), name="event_not_fanned_out"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"

    @property
    def resource_key(self) -> str:
        return f"{self.resource_type}:{self.resource_id}"


class WebhookEndpoint(TenantOwned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    url = models.URLField(max_length=2000)
    event_types = models.JSONField(default=list)
    # `whsec_<base64>`; the previous one keeps signing beside it for a while
    # after a rotation, so receivers can switch without losing deliveries.
    secret = EncryptedTextField()
    previous_secret = EncryptedTextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    # Start of the current run of failed attempts; cleared by a success.
    failing_since = models.DateTimeField(null=True, blank=True)
    # One drain sends to an endpoint at a time (events/drain.py): it holds the
    # endpoint until then, renewing as it goes; a killed worker's hold runs out
    # and the sweep starts another drain. A row, not an advisory lock: the
    # database may sit behind PgBouncer in transaction pooling.
    drain_leased_until = models.DateTimeField(null=True, blank=True)
    # When the drain queued for the endpoint's next retry runs: a later retry
    # queues no second task before it (one waiting task per endpoint, not per failure).
    drain_scheduled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox", "created_at"])]

    def __str__(self) -> str:
        return self.url

    def subscribes_to(self, event_type: str) -> bool:
        return event_type in self.event_types


class Delivery(models.Model):
    """One event to deliver to one endpoint (a redelivery adds another)."""

    class State(models.TextChoices):
        PENDING = "PENDING"
        DELIVERED = "DELIVERED"
        FAILED = "FAILED"  # gave up after the retry window

    id = models.BigAutoField(primary_key=True)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    resource_key = models.CharField(max_length=120)
    redelivery = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    first_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["endpoint", "resource_key", "state", "id"]),
            models.Index(fields=["state", "next_attempt_at"]),
            # What a drain reads: an endpoint's pending deliveries in event order,
            # however long its history of delivered ones.
            models.Index(
                fields=["endpoint", "event", "id"],
                condition=models.Q(state="PENDING"),
                name="delivery_pending_by_endpoint",
            ),
        ]
        constraints = [
            # The fan-out may run twice (a redelivered task, the sweep): one
            # first delivery per event and endpoint whatever happens.
            models.UniqueConstraint(
                fields=["event", "endpoint"],
                condition=models.Q(redelivery=False),
                name="delivery_once_per_endpoint",
            )
        ]


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField()
    error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
