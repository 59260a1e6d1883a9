"""Users, their credentials, sign-in challenges and refresh tokens."""

import uuid
from typing import ClassVar

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from bankapi.crypto import EncryptedTextField
from bankapi.models import Custodian, Customer, Program
from bankapi.roles import Role


class UserManager(BaseUserManager["User"]):
    def create_user(self, email: str, password: str | None = None, **fields) -> "User":
        user = self.model(email=self.normalize_email(email).lower(), **fields)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields) -> "User":
        fields.update(is_staff=True, is_superuser=True, role=Role.MANAGEMENT, program=None)
        return self.create_user(email, password, **fields)

    def get_by_natural_key(self, username: str | None) -> "User":
        # Admin sign-in: staff have no program, so e-mail alone identifies them.
        if username is None:
            raise self.model.DoesNotExist
        return self.get(email=username.lower(), program__isnull=True)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in. E-mail is unique per program; staff and management
    users belong to no program and are unique among themselves."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254)
    program = models.ForeignKey(
        Program, null=True, blank=True, on_delete=models.PROTECT, related_name="users"
    )
    sandbox = models.BooleanField(default=True)
    role = models.CharField(max_length=12, choices=Role.CHOICES, default=Role.CUSTOMER)
    customer = models.ForeignKey(
        Customer, null=True, blank=True, on_delete=models.PROTECT, related_name="users"
    )
    custodian = models.ForeignKey(
        Custodian, null=True, blank=True, on_delete=models.PROTECT, related_name="users"
    )
    first_name = models.CharField(max_length=100, blank=True)
    last_name = models.CharField(max_length=100, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    email_verified = models.BooleanField(default=True)
    # Set when an admin issues a temporary password: the next sign-in must replace it.
    must_change_password = models.BooleanField(default=False)
    totp_secret = EncryptedTextField(blank=True, default="")
    totp_confirmed = models.BooleanField(default=False)
    # The last TOTP time step accepted: a code is good once (RFC 6238 section 5.2).
    totp_last_step = models.BigIntegerField(default=0)
    # The step-up PIN (4 to 6 digits) some programs accept to confirm sensitive
    # actions, hashed like a password; empty when none is set.
    step_up_pin = models.CharField(max_length=128, blank=True, default="")
    # Token generation: every token carries it as `ver`; global logout bumps it.
    token_version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        permissions = [
            ("reset_password_user", "Can reset a user's password to a temporary one"),
            ("unlock_user", "Can lift a user's sign-in lockouts"),
            ("sign_out_user", "Can sign a user out everywhere"),
        ]
        # Back-office lookups by e-mail (the unique constraints lead with program).
        indexes = [models.Index(fields=["email"], name="user_email_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["program", "email"],
                condition=Q(program__isnull=False),
                name="user_email_unique_per_program",
            ),
            models.UniqueConstraint(
                fields=["email"],
                condition=Q(program__isnull=True),
                name="user_email_unique_without_program",
            ),
            models.CheckConstraint(
                condition=Q(role=Role.MANAGEMENT) | Q(program__isnull=False),
                name="user_program_required_unless_management",
            ),
            # A role without the party it acts for would scope to nobody at best,
            # and to everybody at worst (a null custodian id matching every
            # customer without a custodian).
            models.CheckConstraint(
                condition=~Q(role=Role.CUSTOMER) | Q(customer__isnull=False),
                name="user_customer_role_has_customer",
            ),
            models.CheckConstraint(
                condition=~Q(role=Role.CUSTODIAN) | Q(custodian__isnull=False),
                name="user_custodian_role_has_custodian",
            ),
        ]

    def __str__(self) -> str:
        return self.email

    def clean(self) -> None:
        """What admin checks before saving: the role's party, in the user's tenant."""
        errors: dict[str, str] = {}
        if self.role == Role.MANAGEMENT:
            if self.program_id or self.customer_id or self.custodian_id:
                errors["role"] = "Management users belong to no program, customer or custodian."
        elif self.program_id is None:
            errors["program"] = "Customer and custodian users belong to a program."
        party = {Role.CUSTOMER: ("customer", self.customer), Role.CUSTODIAN: ("custodian", self.custodian)}
        if self.role in party:
            name, value = party[self.role]
            if value is None:
                errors[name] = f"A {self.role} user needs its {name}."
            elif (value.program_id, value.sandbox) != (self.program_id, self.sandbox):
                errors[name] = f"The {name} must be in the user's program and environment."
            other = "custodian" if name == "customer" else "customer"
            if getattr(self, f"{other}_id"):
                errors[other] = f"A {self.role} user has no {other}."
        if errors:
            raise ValidationError(errors)

    @property
    def has_mfa(self) -> bool:
        return self.totp_confirmed

    @property
    def has_passkey(self) -> bool:
        return self.passkeys.exists()


class PasskeyCredential(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="passkeys")
    credential_id = models.BinaryField(unique=True)
    public_key = models.BinaryField()
    sign_count = models.PositiveBigIntegerField(default=0)
    transports = models.JSONField(default=list, blank=True)
    friendly_name = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.friendly_name or 'passkey'} of {self.user}"


class AuthChallenge(models.Model):
    """A step of a sign-in or enrolment flow, named by an opaque session token.

    Only the token's SHA-256 is stored. A challenge is single-use (consumed by a
    conditional update, so two requests racing with one token cannot both pass),
    lives five minutes and tolerates a few wrong codes (`attempts`).
    """

    class Kind(models.TextChoices):
        SOFTWARE_TOKEN_MFA = "SOFTWARE_TOKEN_MFA"
        EMAIL_VERIFICATION_REQUIRED = "EMAIL_VERIFICATION_REQUIRED"
        NEW_PASSWORD_REQUIRED = "NEW_PASSWORD_REQUIRED"
        MFA_SETUP = "MFA_SETUP"
        SECURITY_SETUP_REQUIRED = "SECURITY_SETUP_REQUIRED"
        PASSKEY_REQUIRED = "PASSKEY_REQUIRED"
        PASSKEY_REGISTRATION = "PASSKEY_REGISTRATION"
        STEP_UP_PASSKEY = "STEP_UP_PASSKEY"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="challenges")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    # Random bytes a WebAuthn ceremony must sign, or an e-mailed code's hash.
    secret = models.BinaryField(default=b"")
    # Free-form context (e.g. the card a step-up is bound to, the passkey's name).
    context = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # Verifications tried with this session (codes, assertions): it dies at the limit.
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["expires_at"])]


class RefreshToken(models.Model):
    """An opaque refresh token, stored hashed, rotated on every use.

    Tokens descending from one sign-in share a `family`; presenting a token that
    was already rotated means it leaked, so the whole family is revoked.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="refresh_tokens")
    family = models.UUIDField(db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    rotated_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


class LoginThrottle(models.Model):
    """Recent attempts of one factor for one (program, e-mail): the lockout counter.

    `password` rows count password attempts and are keyed by the e-mail as typed,
    known user or not, so that an unknown address locks exactly like a known one:
    the lockout reveals nothing about which addresses exist.

    `second_factor` rows count the codes a user has tried after the password (TOTP
    at verify-2fa and in step-up confirmations, the e-mailed verification code),
    across all of the user's sign-in sessions. They are keyed by the user's own
    (program, e-mail), which names exactly one user. Keeping them in this table
    rather than in fields on User gives both lockouts one implementation (count up
    front under the row lock), one purge, and no row lock on the busy User row; a
    correct password clears only the `password` row, so it cannot buy an attacker
    fresh code guesses.
    """

    class Factor(models.TextChoices):
        PASSWORD = "password"
        SECOND_FACTOR = "second_factor"
        PASSKEY = "passkey"
        # Per client address (kept in `email`, program null): failed sign-in steps
        # of any user from one client.
        CLIENT = "client"

    factor = models.CharField(max_length=16, choices=Factor.choices, default=Factor.PASSWORD)
    program = models.ForeignKey(Program, null=True, blank=True, on_delete=models.CASCADE)
    email = models.CharField(max_length=254)
    window_started_at = models.DateTimeField()
    failures = models.PositiveSmallIntegerField(default=0)
    # Client rows: attempts counted up front and not yet decided. They count
    # toward the client throttle like failures, but are none: an address whose
    # only attempts are in flight has no recent failure (authn.services.throttle).
    # A default in the database too (here and below), so processes of the release
    # before, which do not know the column, can still insert rows during a
    # rolling deploy.
    in_flight = models.PositiveSmallIntegerField(default=0, db_default=0)
    # Client rows: sign-ins refused for want of a password-check slot while the
    # address had no failure (no failures themselves): they order such addresses
    # among themselves, so one refused before waits behind one never refused.
    refusals = models.PositiveSmallIntegerField(default=0, db_default=0)
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["factor", "program", "email"],
                condition=Q(program__isnull=False),
                name="login_throttle_unique_per_program",
            ),
            models.UniqueConstraint(
                fields=["factor", "email"],
                condition=Q(program__isnull=True),
                name="login_throttle_unique_without_program",
            ),
        ]
