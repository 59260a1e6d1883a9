"""Payment requests and the booked statement of an account."""

import uuid

from django.db import models
from django.db.models import Q

from bankapi.clock import ClockedDateTimeField, account_customer_id
from bankapi.ids import write_ordered_uuid
from bankapi.models import MONEY, Account, Customer, TenantOwned
from payments.models.beneficiary import Beneficiary
from payments.models.fx import FxQuote
from payments.models.incoming import IncomingPayment
from payments.models.ledger import LedgerTransaction


class PaymentRequest(TenantOwned):
    """A payment accepted from a customer's account.

    Acceptance debits the account at once (amount plus fee, into clearing); the
    request stays PENDING (or PENDING_TM while held for compliance review) until
    settlement moves the money out, or a failure reverses the acceptance postings.
    """

    class Status(models.TextChoices):
        PENDING = "PENDING", "Pending settlement"
        PENDING_TM = "PENDING_TM", "Held for compliance review"
        SETTLED = "SETTLED", "Settled"
        FAILED = "FAILED", "Failed"
        RETURNED = "RETURNED", "Returned by the payee's bank"

    class ChargeBearer(models.TextChoices):
        SHA = "SHA", "Shared"
        OUR = "OUR", "Payer pays all charges"
        BEN = "BEN", "Beneficiary pays all charges"

    # Write-ordered: a clock customer's rows share the clock's time, and lists break ties by id.
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="payment_requests")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="payment_requests")
    status = models.CharField(max_length=10, choices=Status.choices)
    # What the payee receives, in the payment currency.
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    # What left the account for it (account currency, fee excluded): the amount
    # itself, or the quote's sell amount when the payment was converted.
    debit_amount = models.DecimalField(**MONEY)
    fee = models.DecimalField(**MONEY)
    fee_waived = models.BooleanField(default=False)
    reference = models.CharField(max_length=140)
    purpose = models.CharField(max_length=140, blank=True)
    charge_bearer = models.CharField(max_length=3, choices=ChargeBearer.choices, blank=True)
    beneficiary = models.ForeignKey(
        Beneficiary, null=True, blank=True, on_delete=models.PROTECT, related_name="payment_requests"
    )
    # The payee as paid (`{name, account, accountType?}`), kept even if the
    # beneficiary is edited later. Null for crypto-funded payments.
    payee = models.JSONField(null=True, blank=True)
    virtual_iban = models.CharField(max_length=34, blank=True)
    schedule = models.ForeignKey(
        "ScheduledPayment", null=True, blank=True, on_delete=models.PROTECT, related_name="payment_requests"
    )
    # The FX quote that converted the payment (international transfer, crypto-funded).
    fx_quote = models.OneToOneField(
        FxQuote, null=True, blank=True, on_delete=models.PROTECT, related_name="payment_request"
    )
    acceptance = models.OneToOneField(
        LedgerTransaction, on_delete=models.PROTECT, related_name="accepted_request"
    )
    # The movement that gave the acceptance back (a payment that failed after
    # acceptance): it names the request on the account's statement.
    reversal = models.OneToOneField(
        LedgerTransaction, null=True, blank=True, on_delete=models.PROTECT, related_name="reversed_request"
    )
    # The movement that credited the payer when the payee's bank sent a settled
    # payment back (its memo is the return reason code).
    return_movement = models.OneToOneField(
        LedgerTransaction, null=True, blank=True, on_delete=models.PROTECT, related_name="returned_request"
    )
    failure_reason = models.CharField(max_length=200, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        permissions = [
            ("review_paymentrequest", "Can approve or reject payments held for review"),
            ("drive_sandbox_paymentrequest", "Can settle or fail sandbox payments"),
            ("return_paymentrequest", "Can record payments returned by the payee's bank"),
        ]
        indexes = [
            models.Index(fields=["account", "created_at"]),
            models.Index(fields=["status", "sandbox"]),
            # What settlement claims, oldest first, and the settlement lag: a
            # partial index holds only the PENDING requests, so its size is the
            # backlog, never the history.
            models.Index(
                fields=["sandbox", "created_at", "id"],
                condition=Q(status="PENDING"),
                name="payment_request_pending_idx",
            ),
            # The back office's newest-first list and today's volume on its dashboard.
            models.Index(fields=["created_at"], name="payment_request_created_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="payment_amount_positive"),
            models.CheckConstraint(condition=Q(debit_amount__gt=0), name="payment_debit_positive"),
            models.CheckConstraint(condition=Q(fee__gte=0), name="payment_fee_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.amount} {self.currency} {self.status} ({self.id})"


class StatementEntry(TenantOwned):
    """A booked line of an account's statement (the transactions list).

    Written in the same database transaction as the ledger movement that books
    it (funding, settlement), and pointing at it: the ledger stays the source of
    truth, this is its customer-facing view. Accepted payments are not booked
    until they settle; a payment that fails before settling never is.
    """

    class Direction(models.TextChoices):
        DEBIT = "DEBIT", "Debit"
        CREDIT = "CREDIT", "Credit"

    # Write-ordered: a clock customer's rows share the clock's time, and lists break ties by id.
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="statement_entries")
    ledger_transaction = models.ForeignKey(LedgerTransaction, on_delete=models.PROTECT, related_name="+")
    payment_request = models.ForeignKey(
        PaymentRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="statement_entries"
    )
    # On a return's credit: the settled request the payee's bank sent back.
    return_of = models.ForeignKey(
        PaymentRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="returns"
    )
    # On the credit of money from another bank: that incoming payment.
    incoming_payment = models.OneToOneField(
        IncomingPayment, null=True, blank=True, on_delete=models.PROTECT, related_name="statement_entry"
    )
    # On the debit of a card authorization's clearing: that authorization (its
    # id as a fact of the entry: cards pay through this app, not the reverse).
    card_authorization_id = models.UUIDField(null=True, blank=True)
    direction = models.CharField(max_length=6, choices=Direction.choices)
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    reference = models.CharField(max_length=140, blank=True)
    # The account's customer's time (its test clock's, if it has one).
    booked_at = ClockedDateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "statement entries"
        indexes = [models.Index(fields=["account", "booked_at"])]
        constraints = [models.CheckConstraint(condition=Q(amount__gt=0), name="statement_amount_positive")]

    def __str__(self) -> str:
        return f"{self.direction} {self.amount} {self.currency}"

    def clock_customer_id(self) -> uuid.UUID | None:
        """Whose time books it (`bankapi.clock.row_now`): its account's customer's."""
        return account_customer_id(self.account_id)
