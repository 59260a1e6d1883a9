"""Admin for what onboarding operators configure and move: legal document sets
(content uploaded, hash computed from it), the sandbox provider's verification
outcomes, program onboarding settings, and application stages (through the
stage service)."""

from django import forms
from django.contrib import admin, messages

from bankapi.errors import ApiError
from onboarding.models import (
    Application,
    DocumentUpload,
    LegalDocument,
    LegalDocumentSet,
    ProgramOnboarding,
    Ubo,
    VerificationStep,
)
from onboarding.services.applications import application_stage_move
from onboarding.services.verification import verification_outcomes_recorded

MAX_LEGAL_DOCUMENT_BYTES = 5 * 1024 * 1024


class LegalDocumentForm(forms.ModelForm):
    upload = forms.FileField(
        required=False,
        help_text="The document's content (e.g. a PDF or text file). Its sha256 becomes the document's hash. "
        "Required for a new document; leave empty to keep the current content.",
    )

    class Meta:
        model = LegalDocument
        fields = ["key", "version", "name", "required", "applicable_to", "effective_date", "upload"]

    def clean_upload(self):
        upload = self.cleaned_data.get("upload")
        if upload is None:
            if not self.instance.pk or not self.instance.content:
                raise forms.ValidationError("Upload the document's content.")
            return None
        if upload.size > MAX_LEGAL_DOCUMENT_BYTES:
            raise forms.ValidationError("At most 5 MiB.")
        return upload

    def save(self, commit=True):
        upload = self.cleaned_data.get("upload")
        if upload is not None:
            self.instance.content = upload.read()
            self.instance.content_type = upload.content_type or "application/octet-stream"
        return super().save(commit=commit)


class LegalDocumentInline(admin.StackedInline):
    model = LegalDocument
    form = LegalDocumentForm
    extra = 0
    readonly_fields = ("hash", "content_type")


@admin.register(LegalDocumentSet)
class LegalDocumentSetAdmin(admin.ModelAdmin):
    list_display = ("version", "program", "sandbox", "is_current", "last_updated", "provider")
    list_filter = ("sandbox", "is_current", "program")
    list_select_related = ("program",)
    search_fields = ("version",)
    inlines = [LegalDocumentInline]


class UboInline(admin.TabularInline):
    model = Ubo
    extra = 0
    fields = ("first_name", "last_name", "email", "status")
    readonly_fields = ("status",)


class VerificationStepInline(admin.TabularInline):
    """Outcomes the sandbox provider reports: for the application (UBO empty) or a UBO."""

    model = VerificationStep
    extra = 0
    fields = ("ubo", "step", "status", "rejection_type", "comments", "doc_country", "doc_type", "position")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if db_field.name == "ubo":
            application_id = request.resolver_match.kwargs.get("object_id")
            field.queryset = Ubo.objects.filter(application_id=application_id)
        return field


def _stage_action(to_stage: str):
    def move(modeladmin, request, queryset) -> None:
        moved = refused = 0
        for application in queryset:
            try:
                application_stage_move(application=application, to_stage=to_stage)
                moved += 1
            except ApiError:
                refused += 1
        level = messages.SUCCESS if not refused else messages.WARNING
        modeladmin.message_user(
            request, f"{moved} moved to {to_stage}; {refused} not in a stage that leads there.", level
        )

    move.short_description = f"Move selected applications to {to_stage}"
    move.__name__ = f"move_to_{to_stage.lower()}"
    return move


@admin.register(Application)
class ApplicationAdmin(admin.ModelAdmin):
    list_display = ("id", "customer", "is_company", "workflow_stage", "verification_provider", "created_at")
    list_filter = ("workflow_stage", "is_company", "sandbox", "program")
    search_fields = ("id", "applicant_email")
    list_select_related = ("customer",)
    raw_id_fields = ("customer",)
    # The stage moves only through the actions (the stage service checks each move).
    readonly_fields = (
        "program",
        "sandbox",
        "customer",
        "is_company",
        "workflow_stage",
        "verification_provider",
        "legal_documents_acceptance",
        "created_at",
        "updated_at",
    )
    fields = (
        "program",
        "sandbox",
        "customer",
        "is_company",
        "applicant_first_name",
        "applicant_last_name",
        "applicant_email",
        "workflow_stage",
        "verification_provider",
        "legal_documents_acceptance",
        "created_at",
        "updated_at",
    )
    inlines = [UboInline, VerificationStepInline]
    actions = [
        _stage_action(stage)
        for stage in (
            Application.Stage.IN_PROGRESS,
            Application.Stage.SUBMITTED,
            Application.Stage.IN_REVIEW,
            Application.Stage.APPROVED,
            Application.Stage.REJECTED,
        )
    ]

    def has_add_permission(self, request) -> bool:
        # Applications are started by the applicant through the API.
        return False

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.model is VerificationStep and formset.has_changed():
            # What operators set here is what the sandbox provider reports.
            verification_outcomes_recorded(application=form.instance)


@admin.register(ProgramOnboarding)
class ProgramOnboardingAdmin(admin.ModelAdmin):
    list_display = ("program", "verification_provider")
    list_select_related = ("program",)


@admin.register(DocumentUpload)
class DocumentUploadAdmin(admin.ModelAdmin):
    list_display = ("key", "customer", "collection", "document_type", "content_type", "created_at")
    list_filter = ("collection", "sandbox", "program")
    search_fields = ("key",)
    list_select_related = ("customer",)
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
