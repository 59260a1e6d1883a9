"""The shared kernel: programs (tenants), custodians, customers and accounts.

Every tenant-owned row carries `program` and `sandbox`; every query made for a
caller filters on both (see `bankapi.scope`).
"""

import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from bankapi.clock import ClockedDateTimeField
from bankapi.codes import (
    CURRENCY_CHOICES,
    SUPPORTED_CURRENCIES,
    bic_problem,
    iban_problem,
    normalise_bic,
    normalise_iban,
)
from bankapi.formats import SINGLE_LINE_TEXT_PATTERN
from bankapi.funds import available_balance
from bankapi.row_objects import from_db_then_after_load
from bankapi.tenancy import TENANT


class DecimalDigits(TypedDict):
    """`**MONEY` as DecimalField keyword arguments, typed."""

    max_digits: int
    decimal_places: int


MONEY: DecimalDigits = {"max_digits": 18, "decimal_places": 2}
ZERO = Decimal("0.00")


def currency_field(**kwargs: Any) -> "models.CharField[str, str]":
    """A currency column: an ISO 4217 code with 2 minor units (`bankapi.codes`).

    Pair it with `currency_constraint` so the database refuses what a form would.
    """
    return models.CharField(max_length=3, choices=CURRENCY_CHOICES, **kwargs)


def currency_constraint(*fields: str, name: str) -> models.CheckConstraint:
    condition = models.Q()
    for field in fields:
        condition &= models.Q(**{f"{field}__in": SUPPORTED_CURRENCIES})
    return models.CheckConstraint(
        condition=condition, name=name, violation_error_message="Not a supported ISO 4217 currency."
    )


if TYPE_CHECKING:
    from bankapi.scope import Scope


_RowT = TypeVar("_RowT", bound=models.Model)


class TenantQuerySet(models.QuerySet[_RowT]):
    def for_scope(self, scope: "Scope") -> "TenantQuerySet[_RowT]":
        """Rows of the caller's program and environment (a `bankapi.scope.Scope`):
        the rule `bankapi.tenancy.TENANT`.

        Narrowing further (to the caller's customer or custodian) is the
        selector's job: what "own" means differs per resource.
        """
        return TENANT.filter(self, scope)


class TenantOwned(models.Model):
    """Base of every tenant-owned row: its program, its environment and its times.

    Every query made for a caller goes through `objects.for_scope(scope)` (or a
    selector built on it), so a row of another program or environment is never
    seen.
    """

    program = models.ForeignKey(
        "bankapi.Program", on_delete=models.PROTECT, related_name="%(app_label)s_%(class)s_set"
    )
    sandbox = models.BooleanField(default=True)
    created_at = ClockedDateTimeField(auto_now_add=True)
    updated_at = ClockedDateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        abstract = True


class Program(models.Model):
    """A bank partner program: the tenant. Its settings are edited in admin."""

    class AccountType(models.TextChoices):
        CONSUMER = "consumer", "Consumer"
        BUSINESS = "business", "Business"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=120, unique=True)
    account_type = models.CharField(max_length=10, choices=AccountType.choices)
    international_payments_enabled = models.BooleanField(default=False)
    cardholders_enabled = models.BooleanField(default=False)
    pin_confirmation_enabled = models.BooleanField(default=False)
    # Any caller may ask for the fee to be waived unless the program turns it off.
    fee_waiver_allowed = models.BooleanField(default=True)
    require_idempotency_key = models.BooleanField(default=False)
    per_payment_limit = models.DecimalField(
        **MONEY, default=Decimal("25000.00"), validators=[MinValueValidator(ZERO)]
    )
    daily_outbound_limit = models.DecimalField(
        **MONEY, default=Decimal("500000.00"), validators=[MinValueValidator(ZERO)]
    )
    review_threshold = models.DecimalField(
        **MONEY,
        default=Decimal("10000.00"),
        validators=[MinValueValidator(ZERO)],
        help_text="Payments of at least this amount are held for compliance review.",
    )
    fee_per_payment = models.DecimalField(**MONEY, default=ZERO, validators=[MinValueValidator(ZERO)])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Custodian(TenantOwned):
    """A firm that acts for many customers (runs their batch payments)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="custodians")
    name = models.CharField(max_length=200)

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox"])]

    def __str__(self) -> str:
        return self.name


class Customer(TenantOwned):
    class Kind(models.TextChoices):
        INDIVIDUAL = "individual", "Individual"
        COMPANY = "company", "Company"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="customers")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.INDIVIDUAL)
    name = models.CharField(max_length=200)
    custodian = models.ForeignKey(
        Custodian, null=True, blank=True, on_delete=models.PROTECT, related_name="customers"
    )
    # A sandbox customer's test clock, set when it is made and never changed:
    # its money and objects live at the clock's time (`bankapi.clock`).
    test_clock = models.ForeignKey(
        "bankapi.TestClock",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.PROTECT,
        related_name="customers",
    )
    # When `POST /v1/sandbox/customers` made it (real time: the per-program
    # budget counts these); null for every other customer.
    made_on_demand_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["program", "sandbox"]),
            models.Index(
                fields=["program", "made_on_demand_at"],
                condition=models.Q(made_on_demand_at__isnull=False),
                name="customer_made_on_demand",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(test_clock__isnull=True) | models.Q(sandbox=True),
                name="customer_clock_sandbox_only",
            )
        ]

    def __str__(self) -> str:
        return self.name


class TestClock(TenantOwned):
    """A sandbox clock: `frozen_time` is what it reads (the last moment an
    advance fully ran); while an advance runs, `advancing_to` is its target and
    `heartbeat_at` its last sign of life (`bankapi.test_clocks`)."""

    __test__ = False  # not a pytest test class, whatever its name

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="test_clocks")
    name = models.CharField(max_length=70, null=True, blank=True)
    frozen_time = models.DateTimeField()
    advancing_to = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Real times, as every clock's bookkeeping.
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox", "created_at"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(sandbox=True), name="test_clock_sandbox_only")
        ]

    def __str__(self) -> str:
        return self.name or str(self.id)


class Account(TenantOwned):
    """A customer's account. `balance` changes only through ledger postings."""

    class ReferenceCharset(models.TextChoices):
        # Single-line text: no control or format characters (bankapi.formats).
        ANY = "ANY", "Any printable"
        # The SWIFT "x" character set used by UK and SEPA schemes.
        SWIFT = "SWIFT", "SWIFT x charset"

    REFERENCE_PATTERNS = {
        ReferenceCharset.ANY: SINGLE_LINE_TEXT_PATTERN,
        ReferenceCharset.SWIFT: r"^[A-Za-z0-9/\-?:().,'+ ]*$",
    }

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="accounts")
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="accounts")
    name = models.CharField(max_length=120, blank=True)
    currency = currency_field()
    balance = models.DecimalField(**MONEY, default=ZERO)
    reference_min = models.PositiveSmallIntegerField(default=1)
    reference_max = models.PositiveSmallIntegerField(default=140)
    reference_charset = models.CharField(
        max_length=10, choices=ReferenceCharset.choices, default=ReferenceCharset.ANY
    )
    sort_code = models.CharField(max_length=6, blank=True)
    account_number = models.CharField(max_length=8, blank=True)
    iban = models.CharField(max_length=34, blank=True)
    bic = models.CharField(max_length=11, blank=True)
    # Whether this account's provider can price FX (otherwise a quote is 422 PROVIDER_ERROR).
    fx_quotes_supported = models.BooleanField(default=True)
    # What the account has sent on one UTC day, for the program's daily outbound
    # limit: the debit amounts (fees excluded) of the payments accepted that day
    # and not failed since. A payment's debit counts its amount here in the same
    # statement that takes the balance (see payments.ledger), so the limit costs
    # a payment no statement of its own and stays flat as the day fills; a
    # payment on a new day starts the count again. Internal, never shown.
    outbound_day = models.DateField(null=True, blank=True, editable=False)
    outbound_total = models.DecimalField(**MONEY, default=ZERO, editable=False)
    # When the account's latest ledger posting was booked. A posting is booked
    # at the later of now and this, in the statement that changes the balance
    # (see payments.ledger), so an account's booking times never go backwards,
    # whatever the clocks of the hosts posting to it: a statement's running
    # balance follows its entries in time order. Internal, never shown.
    last_booked_at = models.DateTimeField(null=True, blank=True, editable=False)
    # What the account's open holds (`payments.models.Hold`) set aside for
    # payments still to come (a batch's items, from funding until each is paid or
    # released). Not a booking: it lowers only what the account may spend
    # (`bankapi.funds`). Changed only with the holds, under the account's row lock.
    held = models.DecimalField(**MONEY, default=ZERO, editable=False)

    # Written only by the ledger's and the limit's own statements, under the
    # account's row lock: saving an account loaded earlier must not put back the
    # values it was loaded with.
    LEDGER_FIELDS = frozenset({"balance", "outbound_day", "outbound_total", "last_booked_at", "held"})

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox", "customer"])]
        constraints = [
            # Nothing may spend more than an account holds: the last line of defence
            # behind the row-locked funds check in the payment service.
            models.CheckConstraint(condition=models.Q(balance__gte=0), name="account_balance_non_negative"),
            models.CheckConstraint(
                condition=models.Q(reference_min__lte=models.F("reference_max")),
                name="account_reference_range",
            ),
            models.CheckConstraint(
                condition=models.Q(outbound_total__gte=0), name="account_outbound_total_non_negative"
            ),
            # Holds set aside money the account has: never more than its balance.
            models.CheckConstraint(
                condition=models.Q(held__gte=0, balance__gte=models.F("held")), name="account_held_covered"
            ),
            currency_constraint("currency", name="account_currency_supported"),
        ]

    def __str__(self) -> str:
        return f"{self.name or self.id} ({self.currency})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save everything but the ledger fields, which only the ledger's own
        statements write. Asking to write one (`update_fields`), or saving an
        account whose ledger fields were changed in memory, raises ValueError:
        the change would otherwise be dropped without a word."""
        if not self._state.adding:
            named = set(kwargs.get("update_fields") or ()) & self.LEDGER_FIELDS
            stored = getattr(self, "_stored_ledger_values", {})
            current = self._ledger_values()
            changed = {name for name, value in stored.items() if current.get(name, value) != value}
            if named or changed:
                raise ValueError(
                    f"Account.save does not write {', '.join(sorted(named | changed))}: balances and "
                    "daily totals change only through ledger postings (payments.ledger), under "
                    "the account's row lock"
                )
            if kwargs.get("update_fields") is None:
                kwargs["update_fields"] = [
                    field.name
                    for field in self._meta.concrete_fields
                    if not field.primary_key and field.name not in self.LEDGER_FIELDS
                ]
        super().save(*args, **kwargs)
        self.ledger_values_stored()

    from_db = classmethod(from_db_then_after_load)  # type: ignore[assignment,var-annotated]  # then after_load

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        super().refresh_from_db(*args, **kwargs)
        self.ledger_values_stored()

    def ledger_values_stored(self) -> None:
        """Record this object's ledger fields as what the database holds: after
        loading it, and after a ledger statement wrote them and copied its result
        here."""
        self._stored_ledger_values = self._ledger_values()

    after_load = ledger_values_stored  # what loading an account adds to Django's `from_db`

    def _ledger_values(self) -> dict[str, Any]:
        # Deferred fields are not in __dict__: leave them unread.
        return {name: self.__dict__[name] for name in self.LEDGER_FIELDS if name in self.__dict__}

    @property
    def available(self) -> Decimal:
        """What the account may spend now: its balance less its open holds."""
        return available_balance(self.balance, self.held)

    def clean(self) -> None:
        errors: dict[str, str | None] = {}
        if self.iban:
            errors["iban"] = iban_problem(self.iban)
            self.iban = normalise_iban(self.iban)
        if self.bic:
            errors["bic"] = bic_problem(self.bic, self.iban or None)
            self.bic = normalise_bic(self.bic)
        errors = {name: problem for name, problem in errors.items() if problem}
        if errors:
            raise ValidationError(errors)

    @property
    def reference_pattern(self) -> str:
        return self.REFERENCE_PATTERNS[self.ReferenceCharset(self.reference_charset)]


class SandboxManifest(models.Model):
    """What `bootstrap_sandbox --json` printed, so a rerun prints the same object.

    Sandbox credentials only: these are demo users of the sandbox environment.
    """

    key = models.CharField(max_length=50, unique=True)
    data = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)


class IdempotencyRecord(TenantOwned):
    """One idempotency key of one owner for one operation.

    The unique constraint is what makes a key act once: two requests racing with
    the same key cannot both insert a claim. Program and environment are part of
    it, so a management user's key in one program never answers in another.
    """

    class OwnerKind(models.TextChoices):
        CUSTOMER = "customer", "Customer"
        CUSTODIAN = "custodian", "Custodian"
        MANAGEMENT = "management", "Management user"

    class State(models.TextChoices):
        CLAIMED = "CLAIMED", "Claimed (request in progress)"
        COMPLETED = "COMPLETED", "Completed (response stored)"

    id = models.BigAutoField(primary_key=True)
    owner_kind = models.CharField(max_length=10, choices=OwnerKind.choices)
    owner_id = models.UUIDField()
    # Short and stable, such as "payments.create" or "batches.submit".
    operation = models.CharField(max_length=64)
    key = models.UUIDField()
    # What the key was first used for (for payments: amount, accountId, beneficiaryId).
    fingerprint = models.JSONField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.CLAIMED)
    # Fences a claim: a request whose claim was taken over cannot complete it.
    claim_token = models.UUIDField(default=uuid.uuid4)
    claimed_at = models.DateTimeField()
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # The exact bytes first sent, replayed byte for byte.
    response_body = models.BinaryField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["program", "sandbox", "owner_kind", "owner_id", "operation", "key"],
                name="idempotency_key_per_owner_operation",
            )
        ]
        indexes = [
            # The daily purge deletes by age.
            models.Index(fields=["created_at"], name="idempotency_created_at"),
            # The back office finds a record by the key a client sent (the unique
            # constraint leads with the owner, which the operator may not know).
            models.Index(fields=["key"], name="idempotency_key_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.key} ({self.state})"


class PeriodicLease(models.Model):
    """Who is running a periodic task now, and when it last succeeded: one row per
    entry of beat's schedule (`bankapi.ops.periodic`).

    A run holds the lease while `holder` is set and its heartbeat is younger
    than the lease's life; a run that finds it held does nothing, so beat's
    next tick never starts a second run beside a slow one. A database row, not
    an advisory lock: the database may sit behind PgBouncer in transaction
    pooling, where a session's lock does not survive the transaction. A worker
    that dies leaves a heartbeat that stops, and the lease is taken over once
    it has expired.
    """

    name = models.CharField(max_length=80, primary_key=True)
    holder = models.UUIDField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name
