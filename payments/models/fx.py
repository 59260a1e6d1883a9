"""FX: the sandbox provider's rate table and the quotes given to customers.

The rate table is program-independent: it stands for the market the sandbox
provider prices from, and a market rate is the same for every tenant. Each pair is
stored once, in one direction; the provider prices the other direction from the
inverse of the mid rate, so an operator edits one number per pair and the two
directions can never disagree.
"""

import uuid
from decimal import Decimal

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from bankapi.models import MONEY, Account, DecimalDigits, TenantOwned, currency_constraint, currency_field

# A rate is the price of one unit of a currency in another, to 8 decimal places.
RATE: DecimalDigits = {"max_digits": 20, "decimal_places": 8}
MAX_SPREAD_BPS = 9999


class FxRate(models.Model):
    """A mid-market rate: 1 `base_currency` costs `mid_rate` `quote_currency`.

    Quotes take `spread_bps` (basis points, 1/100 of a percent) off the mid rate
    against the customer.
    """

    id = models.BigAutoField(primary_key=True)
    base_currency = currency_field()
    quote_currency = currency_field()
    mid_rate = models.DecimalField(
        max_digits=18, decimal_places=8, validators=[MinValueValidator(Decimal("0.00000001"))]
    )
    spread_bps = models.PositiveIntegerField(
        default=25,
        validators=[MaxValueValidator(MAX_SPREAD_BPS)],
        help_text="Taken from the mid rate against the customer; 100 bps = 1%.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "FX rate"
        ordering = ["base_currency", "quote_currency"]
        constraints = [
            # One row per pair whichever way round it is written: GBP/EUR and
            # EUR/GBP rows side by side could quote two prices for one pair.
            models.UniqueConstraint(
                Least("base_currency", "quote_currency"),
                Greatest("base_currency", "quote_currency"),
                name="fx_rate_one_row_per_pair",
                violation_error_message="This pair, or its inverse, already has a rate.",
            ),
            models.CheckConstraint(
                condition=~Q(base_currency=F("quote_currency")), name="fx_rate_two_currencies"
            ),
            currency_constraint("base_currency", "quote_currency", name="fx_rate_currency_codes"),
            models.CheckConstraint(condition=Q(mid_rate__gt=0), name="fx_rate_mid_positive"),
            # A spread of 100% or more would quote a rate of zero or below.
            models.CheckConstraint(
                condition=Q(spread_bps__lte=MAX_SPREAD_BPS), name="fx_rate_spread_below_100pct"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.base_currency}/{self.quote_currency} {self.mid_rate}"


class FxQuote(TenantOwned):
    """A firm price given to a customer: alive until `valid_until`, usable once.

    The customer sells `currency_one` and buys `currency_two`; `rate` is the price of
    one unit of `currency_one` in `currency_two`, spread already taken. `amount` is in
    `amount_currency` and `price` is that amount converted into the other currency
    (null when the provider gave no price).
    """

    class Tenor(models.TextChoices):
        ON = "ON", "Overnight (today)"
        TN = "TN", "Tom-next (next business day)"
        SPOT = "SPOT", "Spot (two business days)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="fx_quotes")
    currency_one = models.CharField(max_length=3)
    currency_two = models.CharField(max_length=3)
    amount_currency = models.CharField(max_length=3)
    amount = models.DecimalField(**MONEY)
    rate = models.DecimalField(**RATE)
    price = models.DecimalField(**MONEY, null=True, blank=True)
    tenor = models.CharField(max_length=4, choices=Tenor.choices)
    value_date = models.DateField()
    valid_until = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = "FX quote"
        constraints = [
            models.CheckConstraint(
                condition=~Q(currency_one=F("currency_two")), name="fx_quote_two_currencies"
            ),
            models.CheckConstraint(
                condition=Q(amount_currency=F("currency_one")) | Q(amount_currency=F("currency_two")),
                name="fx_quote_amount_currency_in_pair",
            ),
            models.CheckConstraint(condition=Q(amount__gt=0), name="fx_quote_amount_positive"),
            models.CheckConstraint(condition=Q(rate__gt=0), name="fx_quote_rate_positive"),
            models.CheckConstraint(
                condition=Q(price__isnull=True) | Q(price__gt=0), name="fx_quote_price_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.currency_one}/{self.currency_two} {self.rate} ({self.id})"
