"""Onboarding: applications and their UBOs, legal document sets, verification
outcomes of the sandbox provider, and the document keys issued by presign."""

import hashlib
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from bankapi.models import Customer, Program, TenantOwned
from onboarding.acceptance import LegalAcceptance
from onboarding.kyc import kyc_schema_problems

ACCOUNT_TYPES = [choice for choice, _ in Program.AccountType.choices]


class Application(TenantOwned):
    """A customer's onboarding: KYC for an individual, KYB for a company."""

    class Stage(models.TextChoices):
        NEW = "NEW", "New"
        IN_PROGRESS = "IN_PROGRESS", "In progress"
        SUBMITTED = "SUBMITTED", "Submitted"
        IN_REVIEW = "IN_REVIEW", "In review"
        APPROVED = "APPROVED", "Approved"
        REJECTED = "REJECTED", "Rejected"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="applications")
    is_company = models.BooleanField()
    workflow_stage = models.CharField(max_length=12, choices=Stage.choices, default=Stage.NEW)
    onboarding_v3 = models.BooleanField(default=True)
    applicant_first_name = models.CharField(max_length=100, blank=True)
    applicant_last_name = models.CharField(max_length=100, blank=True)
    applicant_email = models.EmailField(max_length=254)
    # The verification provider active for the program when the application was
    # made: it keeps it, and its status route refuses to answer for another one.
    verification_provider = models.CharField(max_length=40)
    # The acceptance (`LegalAcceptance.to_stored()`; read it with `legal_acceptance()`):
    # copies of the accepted documents' names, hashes and versions, so a later
    # edit of a set never rewrites it.
    legal_documents_acceptance = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["program", "sandbox", "customer"]),
            # The dashboard counts the applications in review of every program;
            # the changelist filters by stage.
            models.Index(fields=["workflow_stage"], name="application_stage_idx"),
        ]

    def legal_acceptance(self) -> LegalAcceptance | None:
        if self.legal_documents_acceptance is None:
            return None
        return LegalAcceptance.from_stored(self.legal_documents_acceptance)

    def __str__(self) -> str:
        return f"{'Company' if self.is_company else 'Individual'} application {self.id}"


class Ubo(models.Model):
    """An ultimate beneficial owner of a company application."""

    class Status(models.TextChoices):
        PENDING = "PENDING", "Pending"
        LINK_SENT = "LINK_SENT", "Link sent"
        IN_PROGRESS = "IN_PROGRESS", "In progress"
        VERIFIED = "VERIFIED", "Verified"
        REJECTED = "REJECTED", "Rejected"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="ubos")
    first_name = models.CharField(max_length=100)
    last_name = models.CharField(max_length=100)
    email = models.EmailField(max_length=254)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # Part of every verification link: a reset bumps it, so links sent before
    # the reset stop working.
    link_generation = models.PositiveIntegerField(default=1)
    # The verification e-mail not yet sent (what rebuilds its link: the redirect
    # URLs, the expiry and the link's base), cleared once it left or gave up: the
    # beat sweep sends it when its task was lost (the broker away, a worker died).
    email_pending = models.JSONField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = "UBO"
        verbose_name_plural = "UBOs"

    def __str__(self) -> str:
        return f"{self.first_name} {self.last_name}"

    def clean(self) -> None:
        if self.application_id and not self.application.is_company:
            raise ValidationError({"application": "Only company applications have UBOs."})


class LegalDocumentSet(TenantOwned):
    """A versioned set of legal documents of a program; one set is current."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    version = models.CharField(max_length=40, help_text="Shown as documentSetVersion.")
    provider = models.CharField(max_length=60, default="sandbox")
    last_updated = models.DateField()
    is_current = models.BooleanField(
        default=False, help_text="The set served to applicants and accepted against (one per program)."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["program", "sandbox", "version"], name="legal_set_version_unique"
            ),
            models.UniqueConstraint(
                fields=["program", "sandbox"], condition=Q(is_current=True), name="legal_set_one_current"
            ),
            models.CheckConstraint(condition=~Q(provider=""), name="legal_set_provider_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.program} legal set {self.version}"


def content_hash(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


class LegalDocument(models.Model):
    """One document of a set; `hash` is always the sha256 of the stored content."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    document_set = models.ForeignKey(LegalDocumentSet, on_delete=models.CASCADE, related_name="documents")
    key = models.SlugField(max_length=60, help_text="The document's id on the API, e.g. terms.")
    version = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    required = models.BooleanField(default=True)
    applicable_to = models.JSONField(default=list, help_text='Account types, e.g. ["consumer", "business"].')
    effective_date = models.DateField()
    content = models.BinaryField(editable=False)
    content_type = models.CharField(max_length=100, default="text/plain; charset=utf-8")
    hash = models.CharField(max_length=71, editable=False)

    class Meta:
        ordering = ["document_set", "key"]
        constraints = [
            models.UniqueConstraint(fields=["document_set", "key"], name="legal_document_key_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.key} {self.version}"

    def save(self, *args, **kwargs) -> None:
        self.hash = content_hash(bytes(self.content))
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "hash"}
        super().save(*args, **kwargs)

    def clean(self) -> None:
        if (
            not isinstance(self.applicable_to, list)
            or not self.applicable_to
            or any(kind not in ACCOUNT_TYPES for kind in self.applicable_to)
        ):
            raise ValidationError({"applicable_to": f"A non-empty list of {', '.join(ACCOUNT_TYPES)}."})


def provider_names() -> list[str]:
    """The verification providers a program may use (`ONBOARDING_VERIFICATION_PROVIDERS`)."""
    return list(settings.ONBOARDING_VERIFICATION_PROVIDERS)


class ProgramOnboarding(models.Model):
    """A program's onboarding settings: its active verification provider and,
    optionally, its own KYC schema (blank: the built-in one)."""

    program = models.OneToOneField(Program, on_delete=models.CASCADE, related_name="onboarding")
    verification_provider = models.CharField(max_length=40, default="sandbox")
    kyc_schema = models.JSONField(null=True, blank=True)

    class Meta:
        verbose_name = "program onboarding settings"
        verbose_name_plural = "program onboarding settings"

    def __str__(self) -> str:
        return f"Onboarding of {self.program}"

    def clean(self) -> None:
        if self.verification_provider not in provider_names():
            raise ValidationError({"verification_provider": f"One of {', '.join(provider_names())}."})
        if self.kyc_schema is not None:
            problems = kyc_schema_problems(self.kyc_schema)
            if problems:
                raise ValidationError({"kyc_schema": problems})


class VerificationStep(models.Model):
    """An outcome the sandbox verification provider reports, set by operators in
    admin: for the application itself (ubo empty) or for one of its UBOs."""

    class Step(models.TextChoices):
        IDENTITY = "IDENTITY", "Identity"
        PROOF_OF_ADDRESS = "PROOF_OF_ADDRESS", "Proof of address"
        SELFIE = "SELFIE", "Selfie"
        COMPANY_REGISTRATION = "COMPANY_REGISTRATION", "Company registration"

    class Status(models.TextChoices):
        PENDING = "PENDING", "Pending"
        IN_PROGRESS = "IN_PROGRESS", "In progress"
        COMPLETED = "COMPLETED", "Completed"
        FAILED = "FAILED", "Failed"

    class RejectionType(models.TextChoices):
        RETRY = "RETRY", "Retry"
        FINAL = "FINAL", "Final"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="verification_steps")
    ubo = models.ForeignKey(
        Ubo, null=True, blank=True, on_delete=models.CASCADE, related_name="verification_steps"
    )
    step = models.CharField(max_length=24, choices=Step.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    rejection_type = models.CharField(max_length=5, choices=RejectionType.choices, blank=True)
    comments = models.CharField(max_length=500, blank=True)
    doc_country = models.CharField(max_length=2, blank=True, help_text="ISO 3166-1 alpha-2, e.g. GB.")
    doc_type = models.CharField(max_length=40, blank=True, help_text="e.g. PASSPORT, UTILITY_BILL.")
    position = models.PositiveSmallIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "step"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "step"], condition=Q(ubo__isnull=True), name="verification_step_unique"
            ),
            models.UniqueConstraint(
                fields=["application", "ubo", "step"],
                condition=Q(ubo__isnull=False),
                name="verification_ubo_step_unique",
            ),
            # rejectionType is set exactly when the step failed.
            models.CheckConstraint(
                condition=(Q(status="FAILED") & ~Q(rejection_type=""))
                | (~Q(status="FAILED") & Q(rejection_type="")),
                name="verification_rejection_type_iff_failed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.step} {self.status}"

    def clean(self) -> None:
        if self.status == self.Status.FAILED and not self.rejection_type:
            raise ValidationError({"rejection_type": "A failed step needs its rejection type."})
        if self.status != self.Status.FAILED and self.rejection_type:
            raise ValidationError({"rejection_type": "Only a failed step has a rejection type."})
        if self.application_id and self.ubo is not None and self.ubo.application_id != self.application_id:
            raise ValidationError({"ubo": "The UBO must belong to this application."})


class DocumentUpload(TenantOwned):
    """A storage key issued to a customer by presign: only this customer may
    get a download URL for it."""

    class Collection(models.TextChoices):
        KYC = "kyc", "KYC (individual)"
        KYB = "kyb", "KYB (company)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="document_uploads")
    application = models.ForeignKey(
        Application, null=True, blank=True, on_delete=models.SET_NULL, related_name="document_uploads"
    )
    collection = models.CharField(max_length=3, choices=Collection.choices)
    document_type = models.CharField(max_length=40)
    key = models.CharField(max_length=300, unique=True)
    content_type = models.CharField(max_length=255)

    class Meta:
        indexes = [models.Index(fields=["program", "sandbox", "customer"])]

    def __str__(self) -> str:
        return self.key
