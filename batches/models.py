"""Batch payments: drafts, SCA challenges, batches and their items.

A batch belongs to whoever submitted it: a custodian (paying from the accounts of
many of its customers) or a customer (paying from its own accounts). Exactly one
of `custodian` and `owner_customer` is set on a draft, a challenge and a batch.
"""

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from bankapi.ids import write_ordered_uuid
from bankapi.models import MONEY, Account, Custodian, Customer, TenantOwned
from batches.payees import ItemInstruction, ItemPayee
from batches.sent import CheckedPayment, FileInstruction, SentPayment

ONE_OWNER = Q(custodian__isnull=False, owner_customer__isnull=True) | Q(
    custodian__isnull=True, owner_customer__isnull=False
)


class Owned(TenantOwned):
    """A row owned by a custodian or by a customer (never both)."""

    custodian = models.ForeignKey(
        Custodian, null=True, blank=True, on_delete=models.PROTECT, related_name="%(app_label)s_%(class)s_set"
    )
    owner_customer = models.ForeignKey(
        Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The customer named in the path of the single-customer route: its accounts
    # are the only payers allowed. Null on the custodian-wide route.
    route_customer = models.ForeignKey(
        Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        abstract = True

    def clock_customer_id(self) -> uuid.UUID | None:
        """Whose time it lives at (`bankapi.clock.row_now`): its owning customer's
        (a test clock's, for its customers); a custodian's rows, the real time."""
        return self.owner_customer_id


def expired_in_own_time(now: datetime | None = None, before: timedelta = timedelta(0)) -> Q:
    """Rows (drafts) whose `expires_at` lies at or before their owner's now, less
    `before`: a test clock's time for a clock customer's rows, the real time
    (`now`, default the wall clock) for every other row."""
    real = (now or timezone.now()) - before
    clock = F("owner_customer__test_clock__frozen_time") - before
    return Q(owner_customer__test_clock__isnull=True, expires_at__lte=real) | Q(
        owner_customer__test_clock__isnull=False, expires_at__lte=clock
    )


class Draft(Owned):
    """A verified (or still verifying) batch not yet submitted.

    Its status (DRAFT or EXPIRED) is derived from `expires_at` at read time,
    never stored. `payments` is what verify was sent (`SentPayment.to_stored()`
    of each; read them with `sent_payments()`); the verification task fills
    `valid_payments` and `invalid_payments` (`CheckedPayment.to_stored()` of
    each; read them with `checked_payments()`) and sets `verified_at`.
    """

    # Write-ordered: a clock customer's rows share the clock's time, and lists break ties by id.
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    payments = models.JSONField()
    payments_count = models.PositiveIntegerField()
    valid_payments = models.JSONField(null=True, blank=True)
    invalid_payments = models.JSONField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()
    # The real time it was written: what the sweep of stalled verifications and
    # the payload purge read (`created_at` and `expires_at` are its owner's time,
    # a test clock's for its customers).
    written_at = models.DateTimeField(auto_now_add=True)
    # Set in the transaction that creates the batch from this draft.
    submitted_at = models.DateTimeField(null=True, blank=True)
    # A draft made from an ISO 20022 file: its GrpHdr/MsgId and message name
    # (pain.001.001.03 or .09), and its payment instructions in file order
    # (`FileInstruction.to_stored()` of each; read them with `file_instructions()`),
    # each covering the next `count` payments. Null for a draft made from JSON.
    message_id = models.CharField(max_length=35, null=True, blank=True)
    message_name = models.CharField(max_length=15, blank=True)
    instructions = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["program", "sandbox", "custodian", "created_at"]),
            models.Index(fields=["program", "sandbox", "owner_customer", "created_at"]),
        ]
        constraints = [
            models.CheckConstraint(condition=ONE_OWNER, name="draft_one_owner"),
            # One file per MsgId and owner in each environment, however many
            # uploads of it race: the second insert fails and answers 409.
            models.UniqueConstraint(
                fields=["program", "sandbox", "custodian", "message_id"],
                condition=Q(message_id__isnull=False, custodian__isnull=False),
                name="draft_message_id_unique_per_custodian",
            ),
            models.UniqueConstraint(
                fields=["program", "sandbox", "owner_customer", "message_id"],
                condition=Q(message_id__isnull=False, owner_customer__isnull=False),
                name="draft_message_id_unique_per_customer",
            ),
        ]

    @property
    def payload_purged(self) -> bool:
        """Expired unsubmitted a day ago: its payments and results are gone
        (`batches.services.housekeeping`), its record stays."""
        return self.payments_count > 0 and not self.payments

    def sent_payments(self) -> list[SentPayment]:
        return [SentPayment.from_stored(payment) for payment in self.payments]

    def checked_payments(self) -> tuple[list[CheckedPayment], list[CheckedPayment]]:
        """What verification found: the valid payments and the invalid ones, each
        in draft order (both empty while it has not run)."""
        return (
            [CheckedPayment.from_stored(entry) for entry in self.valid_payments or []],
            [CheckedPayment.from_stored(entry) for entry in self.invalid_payments or []],
        )

    @property
    def from_file(self) -> bool:
        return self.message_id is not None

    def item_id(self, index: int) -> uuid.UUID:
        """The id the payment at `index` takes as a batch item once the draft is
        submitted: known before, so a status report can name it already."""
        return uuid.uuid5(self.id, str(index))

    def file_instructions(self) -> list[FileInstruction]:
        return [FileInstruction.from_stored(instruction) for instruction in self.instructions or []]

    def instruction_of_each_payment(self) -> list[FileInstruction]:
        """A file draft's payment instruction of each payment, in order."""
        return [instruction for instruction in self.file_instructions() for _ in range(instruction.count)]

    def __str__(self) -> str:
        return f"Draft {self.id}"


class ScaChallenge(Owned):
    """What initiate answered: the SCA challenge a submit must present.

    Bound to the user who asked for it and to a hash of the payments (and draft);
    valid five minutes; consumed by the one submit that succeeds with it.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    payments_hash = models.CharField(max_length=64)
    draft = models.ForeignKey(Draft, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    total_amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    expires_at = models.DateTimeField()
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SCA challenge"
        constraints = [models.CheckConstraint(condition=ONE_OWNER, name="sca_challenge_one_owner")]

    def __str__(self) -> str:
        return f"SCA challenge {self.id}"


class Batch(Owned):
    class Status(models.TextChoices):
        CREATED = "CREATED", "Created"
        FUNDING_PENDING = "FUNDING_PENDING", "Funding pending"
        FUNDED = "FUNDED", "Funded"
        FUNDING_FAILED = "FUNDING_FAILED", "Funding failed"
        QUEUED = "QUEUED", "Queued"
        PROCESSING = "PROCESSING", "Processing"
        COMPLETED = "COMPLETED", "Completed"
        PARTIALLY_FAILED = "PARTIALLY_FAILED", "Partially failed"
        FAILED = "FAILED", "Failed"

    FINAL = (Status.FUNDING_FAILED, Status.COMPLETED, Status.PARTIALLY_FAILED, Status.FAILED)

    # A batch made from a draft takes the draft's id.
    # Write-ordered: a clock customer's rows share the clock's time, and lists break ties by id.
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    # The payers' customer when they all share one, else null.
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    payments_count = models.PositiveIntegerField()
    # Items that passed every rule at submit (the others are FAILED from the start).
    valid_count = models.PositiveIntegerField()
    currency = models.CharField(max_length=3, blank=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Of a batch made from an ISO 20022 file: its GrpHdr/MsgId and message name.
    message_id = models.CharField(max_length=35, blank=True)
    message_name = models.CharField(max_length=15, blank=True)
    # The real time the batch last moved (made, funded, a chunk of its items
    # paid, finished): what the stall sweep and its figure read. `updated_at` is
    # its owner's time (a test clock's, for its customers), which says nothing
    # of whether a worker is still at it.
    progressed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "batches"
        indexes = [
            # The back office finds a file's batch by its MsgId (exact search).
            models.Index(fields=["message_id"], name="batch_message_id"),
            models.Index(fields=["program", "sandbox", "created_at"]),
            models.Index(fields=["program", "sandbox", "custodian", "created_at"]),
            models.Index(fields=["program", "sandbox", "owner_customer", "created_at"]),
            models.Index(fields=["status", "progressed_at"], name="batch_status_progressed_idx"),
        ]
        constraints = [models.CheckConstraint(condition=ONE_OWNER, name="batch_one_owner")]

    def __str__(self) -> str:
        return f"Batch {self.id} ({self.status})"


class BatchItem(TenantOwned):
    """One payment of a batch, valid or not: every item sent becomes one.

    An invalid item is FAILED from the start with its reasons in `error` and is
    never paid. A valid one is funded with its payer's other items, then becomes
    exactly one payment request (`payment`, unique: an item is paid at most once).
    """

    class Status(models.TextChoices):
        QUEUED = "QUEUED", "Queued"
        PROCESSING = "PROCESSING", "Processing"
        SUCCESS = "SUCCESS", "Success"
        FAILED = "FAILED", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices)
    error = models.TextField(blank=True)
    # What the item was instructed to do, kept whole as it was given (read it
    # with `instruction()`): processing, the back office's retry, the API,
    # admin, status reports and statements read it from here, never from the
    # payer account. The payer account (null when the item named no account the
    # caller may pay from).
    account = models.ForeignKey(Account, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    payer_name = models.CharField(max_length=200, blank=True)
    payer_account_number = models.CharField(max_length=34, blank=True)
    # The payee as the item rules made it (`ItemPayee.to_stored()`; read it with `item_payee()`).
    payee = models.JSONField()
    # Null when the amount sent is not an amount.
    amount = models.DecimalField(**MONEY, null=True, blank=True)
    # The currency the amount was instructed in (a file states it; a JSON item
    # pays in its payer account's currency): not the payer's when they differ,
    # which makes the item invalid.
    currency = models.CharField(max_length=3, blank=True)
    reference = models.TextField(blank=True)
    scheduled_date = models.DateField()
    # From a file: GrpHdr/MsgId, the instruction's PmtInf/PmtInfId, and the
    # transaction's PmtId/InstrId (optional in the file) and PmtId/EndToEndId.
    message_id = models.CharField(max_length=35, blank=True)
    payment_information_id = models.CharField(max_length=35, blank=True)
    instruction_id = models.CharField(max_length=35, blank=True)
    end_to_end_id = models.CharField(max_length=35, blank=True)
    # Why a FAILED item failed: INVALID when it broke an item rule at submit
    # (never paid, by any route or action), else the code of the refusal that
    # stopped it later (INSUFFICIENT_FUNDS, LIMIT_EXCEEDED, ...). Empty otherwise.
    failure_code = models.CharField(max_length=32, blank=True)
    # The hold that sets the item's amount and fee aside on its payer account,
    # placed by the batch's funding (or a retry) and released when the item is
    # paid or refused; null until the item is funded. A funded item that fails
    # and is retried points to its new hold.
    hold = models.OneToOneField(
        "payments.Hold", null=True, blank=True, on_delete=models.PROTECT, related_name="batch_item"
    )
    payment = models.OneToOneField(
        "payments.PaymentRequest", null=True, blank=True, on_delete=models.PROTECT, related_name="batch_item"
    )

    class Meta:
        indexes = [models.Index(fields=["batch", "status"]), models.Index(fields=["status"])]
        constraints = [
            models.UniqueConstraint(fields=["batch", "index"], name="batch_item_index_unique"),
            models.CheckConstraint(
                condition=Q(payment__isnull=True) | Q(status="SUCCESS"), name="batch_item_paid_is_success"
            ),
        ]

    # The failure code of an item that broke an item rule at submit.
    INVALID = "INVALID"

    def item_payee(self) -> ItemPayee:
        return ItemPayee.from_stored(self.payee)

    def instruction(self) -> ItemInstruction:
        """The instruction the item was given, as it was given."""
        return ItemInstruction(
            account_id=self.account_id,
            payee=self.item_payee(),
            amount=self.amount,
            currency=self.currency,
            reference=self.reference,
            end_to_end_id=self.end_to_end_id,
            message_id=self.message_id,
            payment_information_id=self.payment_information_id,
            instruction_id=self.instruction_id,
        )

    def __str__(self) -> str:
        return f"Item {self.index} of {self.batch_id} ({self.status})"
