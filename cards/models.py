"""Cards on accounts and the cardholders who may use them.

A card's PAN and CVV are secrets: they are kept encrypted (Fernet, under
FIELD_ENCRYPTION_KEY), shown only by the secure-details route after a step-up
confirmation, and nowhere else: not in `__str__`, admin, logs or errors. Every
other view of a card shows the last four digits only.
"""

import uuid

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from bankapi.crypto import EncryptedTextField
from bankapi.ids import write_ordered_uuid
from bankapi.models import MONEY, Account, Customer, TenantOwned


class Cardholder(TenantOwned):
    """A person who can hold cards on an account without owning it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="cardholders")
    first_name = models.CharField(max_length=23, blank=True)
    last_name = models.CharField(max_length=23, blank=True)
    email = models.EmailField(max_length=254, blank=True)
    date_of_birth = models.DateField(null=True, blank=True)
    address_line1 = models.CharField(max_length=100, blank=True)
    address_line2 = models.CharField(max_length=100, blank=True)
    city = models.CharField(max_length=100, blank=True)
    state = models.CharField(max_length=100, blank=True)
    postal_code = models.CharField(max_length=16, blank=True)
    country = models.CharField(max_length=2, blank=True, help_text="ISO 3166-1 alpha-2.")

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox", "account"])]

    def __str__(self) -> str:
        return f"{self.first_name} {self.last_name}".strip() or str(self.id)


class Card(TenantOwned):
    class Status(models.TextChoices):
        ACTIVE = "ACTIVE"
        FROZEN = "FROZEN"
        CANCELLED = "CANCELLED"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="cards")
    cardholders = models.ManyToManyField(Cardholder, blank=True, related_name="cards")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    last_four = models.CharField(max_length=4)
    expiry_month = models.PositiveSmallIntegerField(validators=[MinValueValidator(1), MaxValueValidator(12)])
    expiry_year = models.PositiveSmallIntegerField()
    name_on_card = models.CharField(max_length=26)
    pan = EncryptedTextField()
    cvv = EncryptedTextField()

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox", "account"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(expiry_month__gte=1, expiry_month__lte=12), name="card_expiry_month_range"
            ),
        ]

    def __str__(self) -> str:
        return f"Card ending {self.last_four}"


class CardAuthorization(TenantOwned):
    """The card network asking to spend with a card, and what became of it.

    Approved (PENDING), its amount is held on the card's account (`hold`: a
    `payments.Hold`) and counted on the daily limit of its day (`usage_day`),
    until it is cleared (CLEARED: `cleared_amount` paid from the hold by the
    `clearing` movement, the rest given back), reversed (REVERSED) or expires
    (EXPIRED, at `expires_at`: the hold and count given back). Declined
    (DECLINED, with `decline_reason`): nothing held or counted.

    `authorized_at` is the customer's time of the request (a test clock's for
    a customer on one), and so are `created_at` and `updated_at`.
    """

    class Status(models.TextChoices):
        PENDING = "PENDING"
        DECLINED = "DECLINED"
        CLEARED = "CLEARED"
        REVERSED = "REVERSED"
        EXPIRED = "EXPIRED"

    # Rises in write order: the list's order among rows of one time (a clock's).
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    card = models.ForeignKey(Card, on_delete=models.PROTECT, related_name="authorizations")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="card_authorizations")
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="card_authorizations")
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    merchant_name = models.CharField(max_length=70)
    merchant_category_code = models.CharField(max_length=4, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices)
    decline_reason = models.CharField(max_length=30, blank=True)
    cleared_amount = models.DecimalField(**MONEY, null=True, blank=True)
    authorized_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    # The UTC day its amount counts on (null when declined).
    usage_day = models.DateField(null=True, blank=True)
    hold = models.OneToOneField(
        "payments.Hold", null=True, blank=True, on_delete=models.PROTECT, related_name="card_authorization"
    )
    clearing = models.OneToOneField(
        "payments.LedgerTransaction",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="card_authorization",
    )

    class Meta:
        indexes = [
            models.Index(fields=["card", "authorized_at"], name="card_authorization_card_idx"),
            # What the expiry sweep reads: the pending ones, by expiry.
            models.Index(
                fields=["expires_at"],
                condition=models.Q(status="PENDING"),
                name="card_authorization_pending_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(amount__gt=0), name="card_authorization_amount_positive"
            )
        ]

    def __str__(self) -> str:
        return f"Authorization {self.amount} {self.currency} at {self.merchant_name}"
