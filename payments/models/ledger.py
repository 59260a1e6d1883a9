"""The double-entry ledger: system accounts, transactions and their postings."""

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from bankapi.models import MONEY, Account, TenantOwned


class SystemAccount(TenantOwned):
    """The bank's own side of every movement, one per program, environment,
    currency and purpose. Its balance is the sum of its postings (never stored:
    system accounts are touched by every payment and must not be a lock hot spot).
    """

    class Kind(models.TextChoices):
        CLEARING = "CLEARING", "Clearing (accepted, not yet settled)"
        FEES = "FEES", "Fee income"
        FX = "FX", "FX position"
        EXTERNAL = "EXTERNAL", "External (other banks, funding)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    currency = models.CharField(max_length=3)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["program", "sandbox", "kind", "currency"], name="system_account_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.currency} ({self.program})"


class LedgerTransaction(TenantOwned):
    """One balanced movement: its postings sum to zero per currency."""

    class Kind(models.TextChoices):
        FUNDING = "FUNDING", "Funding"
        PAYMENT = "PAYMENT", "Payment accepted"
        SETTLEMENT = "SETTLEMENT", "Payment settled"
        REVERSAL = "REVERSAL", "Payment reversed"
        # A settled payment the payee's bank sent back; the memo is the ISO reason code.
        RETURN = "RETURN", "Payment returned"
        FX = "FX", "Currency conversion"
        # A credit transfer from another bank (`IncomingPayment`).
        INCOMING = "INCOMING", "Incoming payment"
        # A card authorization's clearing, paid from its hold to the merchant's side.
        CARD = "CARD", "Card payment"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    # Makes a posting happen at most once (e.g. "settle:<request id>").
    key = models.CharField(max_length=120, unique=True, null=True, blank=True)
    memo = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


class LedgerPosting(models.Model):
    """One leg of a transaction. `amount` is the signed change to its holder's
    balance: negative debits the holder, positive credits it.

    `created_at` is when the posting was booked. A customer account's postings
    are made one after the other under the account's row lock, at booking times
    that never go backwards (`Account.last_booked_at`), so in the order
    (created_at, id) each one's `balance_after` is the previous one's plus its
    `amount`: the balance at any moment is one index lookup, and a statement's
    postings are one range read (`manage.py check_ledger` verifies the chain).
    `balance_after` is null on system accounts, whose balances are never stored.

    A customer posting also carries what its statement line shows, written in
    the INSERT that books it and never changed: the movement's `kind`, the
    payment request it books (`request_id`: a payment's acceptance, or the
    reversal of a payment that failed), its `reference` and its `description`.
    A statement is then one range read of this table on the index below, with
    no join (`ledger_check` verifies the facts against the movements). Empty
    (null for `request_id`) on system accounts' postings.
    """

    id = models.BigAutoField(primary_key=True)
    transaction = models.ForeignKey(LedgerTransaction, on_delete=models.PROTECT, related_name="postings")
    account = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.PROTECT, related_name="postings"
    )
    system_account = models.ForeignKey(
        SystemAccount, null=True, blank=True, on_delete=models.PROTECT, related_name="postings"
    )
    currency = models.CharField(max_length=3)
    amount = models.DecimalField(**MONEY)
    balance_after = models.DecimalField(**MONEY, null=True, blank=True)
    # Set by the ledger (see `Account.last_booked_at`).
    created_at = models.DateTimeField(default=timezone.now)
    # The statement line's facts (customer postings only; see the class's text).
    kind = models.CharField(max_length=12, blank=True, default="")
    # The PaymentRequest's id, as a fact of the line rather than a foreign key:
    # acceptance inserts its postings before the request, and nothing follows it.
    request_id = models.UUIDField(null=True, blank=True)
    reference = models.CharField(max_length=140, blank=True, default="")
    description = models.CharField(max_length=240, blank=True, default="")
    # The other party of a movement with the world outside the bank, as the
    # movement's writer names it (`payments.ledger.Counterparty`): who paid a
    # credit or was paid by a debit, its IBAN when known, and the end-to-end id
    # the movement came with. Empty on every other posting.
    end_to_end_id = models.CharField(max_length=35, blank=True, default="")
    counterparty_name = models.CharField(max_length=140, blank=True, default="")
    counterparty_iban = models.CharField(max_length=34, blank=True, default="")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(account__isnull=False, system_account__isnull=True)
                    | Q(account__isnull=True, system_account__isnull=False)
                ),
                name="posting_has_exactly_one_holder",
            ),
            models.CheckConstraint(condition=~Q(amount=0), name="posting_amount_not_zero"),
        ]
        indexes = [
            models.Index(fields=["account", "created_at", "id"], name="posting_account_booked_idx"),
        ]


class Hold(models.Model):
    """Money set aside on a customer account for a payment still to come: a
    batch item's amount and fee, from the batch's funding until the item is
    paid (its own hold is what pays it) or its hold is released (acceptance
    refused it).

    A hold is not a booking: it moves no money, has no postings and never shows
    on a statement. While open it lowers the account's available balance
    (`Account.held` is the sum of its open holds, changed with them under the
    account's row lock; `manage.py check_ledger` verifies the sum). Rows are
    kept once released, so what was held at a past moment can be told: the
    holds placed at or before it and not yet released then.
    """

    # Chosen by the placer: a batch item's first hold takes the item's id.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="holds", db_index=False)
    amount = models.DecimalField(**MONEY)
    placed_at = models.DateTimeField()
    # When it stopped lowering the available balance: at the booking of the
    # payment it paid, or when it was released unused.
    released_at = models.DateTimeField(null=True, blank=True)
    # What it is for, in words ("Batch <id> item 3").
    memo = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(amount__gt=0), name="hold_amount_positive")]
        # The holds in force at a moment are the open ones and those released
        # after it: few for a recent moment, whatever the account's history.
        indexes = [models.Index(fields=["account", "released_at"], name="hold_account_released_idx")]

    def __str__(self) -> str:
        return f"Hold {self.amount} on {self.account_id}"


class StatementDay(models.Model):
    """The statement lines of one closed UTC day of an account, in one format,
    stored once and reused by every statement that covers the day.

    A posting's statement line depends on the posting alone, not on the period
    asked for, and a statement's entries are its days' lines in booking order:
    a day's lines, joined with the format's separator, are a piece of every
    statement that covers it. A day is stored only once it is closed: the
    account's `last_booked_at` (read before the day's postings) is at or after
    00:00 UTC of the next day. Booking times never go backwards and are set
    under the account's row lock with each posting, so every posting of a closed
    day is committed and visible, and none can be booked into it later
    (`payments.selectors.ledger.account_statement`).

    `layout` names the format and a digest of how its lines are written: a
    change to a line's layout reads under a new name, never the old pieces.
    Rows are only inserted (`ON CONFLICT DO NOTHING`: readers racing to store
    the same day store one), never changed.
    """

    id = models.BigAutoField(primary_key=True)
    # Served by the unique index below, which starts with the account.
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+", db_index=False)
    layout = models.CharField(max_length=40)
    day = models.DateField()
    # How many lines (entries) `lines` holds: zero on a day without postings.
    entries = models.PositiveIntegerField()
    # The day's lines joined with the layout's separator, escaped as the format's
    # body is, in UTF-8 (empty on a day without postings): bytes, as the body
    # is sent, so a year of pieces is neither decoded nor encoded again.
    lines = models.BinaryField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "layout", "day"], name="statement_day_unique"),
        ]
