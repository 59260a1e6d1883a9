"""Admin for what onboarding operators configure and move: legal document sets
(content uploaded, hash computed from it), the sandbox provider's verification
outcomes, program onboarding settings, and application stages (through the
stage service)."""

from django import forms
from django.contrib import admin
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime

from bankapi.backoffice import dashboard
from bankapi.backoffice.admin_base import (
    CappedCountPaginator,
    ExactSearchMixin,
    TenancyFixedMixin,
    apply_each,
)
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
from onboarding.services.legal_sets import legal_set_publish
from onboarding.services.ubos import ubo_verification_reset
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
class LegalDocumentSetAdmin(TenancyFixedMixin, ExactSearchMixin, admin.ModelAdmin):
    """A new version is a new set (documents uploaded, hashes computed from the
    files), then published with the action: one set per program is current."""

    list_display = ("version", "program", "sandbox", "is_current", "last_updated", "provider")
    list_filter = ("sandbox", "is_current", "program")
    exact_search_fields = ("id", "version")
    search_help_text = "An exact set id or version."
    list_select_related = ("program",)
    # Only the publish action changes which set is current.
    readonly_fields = ("is_current",)
    inlines = [LegalDocumentInline]
    actions = ["publish"]

    @admin.action(
        description="Publish the selected set (it becomes its program's current set)", permissions=["change"]
    )
    def publish(self, request, queryset) -> None:
        def publish_one(document_set: LegalDocumentSet) -> str:
            legal_set_publish(document_set=document_set)
            return f"Published legal document set {document_set.version} as current"

        apply_each(self, request, queryset, publish_one)


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
        if db_field.name == "ubo" and field is not None:
            application_id = request.resolver_match.kwargs.get("object_id")
            field.queryset = Ubo.objects.filter(application_id=application_id)
        return field


def _stage_action(to_stage: str):
    @admin.action(description=f"Move selected applications to {to_stage}", permissions=("review",))
    def move(modeladmin, request, queryset) -> None:
        def move_one(application: Application) -> str:
            before = application.workflow_stage
            application_stage_move(application=application, to_stage=to_stage)
            return f"Moved from {before} to {to_stage}"

        apply_each(modeladmin, request, queryset, move_one)

    move.__name__ = f"move_to_{to_stage.lower()}"
    return move


@admin.register(Application)
class ApplicationAdmin(ExactSearchMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "customer",
        "is_company",
        "workflow_stage",
        "program",
        "sandbox",
        "created_at",
    )
    # The provider is on the application's page and a filter: a column more would
    # push the list past a laptop screen's width.
    list_filter = ("workflow_stage", "is_company", "verification_provider", "sandbox", "program")
    exact_search_fields = ("id", "customer")
    search_help_text = "An exact application id or customer id."
    list_select_related = ("customer", "program")
    raw_id_fields = ("customer",)
    paginator = CappedCountPaginator
    show_full_result_count = False
    # The stage moves only through the actions (the stage service checks each move).
    readonly_fields = (
        "program",
        "sandbox",
        "customer",
        "is_company",
        "workflow_stage",
        "verification_provider",
        "legal_acceptance",
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
        "legal_acceptance",
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

    def has_delete_permission(self, request, obj=None) -> bool:
        # An application is the record of a customer's onboarding: it is rejected,
        # never deleted.
        return False

    @admin.display(description="legal documents accepted")
    def legal_acceptance(self, application: Application) -> str:
        acceptance = application.legal_acceptance()
        if acceptance is None:
            return "Not yet accepted"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    document.name,
                    document.version,
                    "required" if document.required else "optional",
                    ", ".join(document.applicable_to) or "-",
                    document.effective_date.isoformat(),
                    # sha256:<64 hex digits>: the start, the whole on hover.
                    format_html('<span title="{}">{}…</span>', document.hash, document.hash[:19]),
                )
                for document in acceptance.documents
            ),
        )
        return format_html(
            "Set version {} accepted on {}"
            '<table class="readable-fields"><thead><tr><th>Document</th><th>Version</th><th>Required</th>'
            "<th>Applies to</th><th>Effective</th><th>Hash</th></tr></thead><tbody>{}</tbody></table>",
            acceptance.document_set_version,
            date_format(localtime(acceptance.accepted_at), "DATETIME_FORMAT"),
            rows,
        )

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm("onboarding.review_application")

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.model is VerificationStep and formset.has_changed():
            # What operators set here is what the sandbox provider reports.
            verification_outcomes_recorded(application=form.instance)


@admin.register(VerificationStep)
class VerificationStepAdmin(ExactSearchMixin, admin.ModelAdmin):
    """Sandbox verification outcomes: what the sandbox provider reports for an
    application (UBO empty) or one of its UBOs. Operations set them here without
    the right to edit the application itself."""

    list_display = (
        "application",
        "ubo",
        "step",
        "status",
        "rejection_type",
        "doc_type",
        "doc_country",
        "updated_at",
    )
    list_filter = ("step", "status")
    exact_search_fields = ("application", "id")
    search_help_text = "An exact application id: its outcomes."
    list_select_related = ("application", "ubo")
    raw_id_fields = ("application", "ubo")
    paginator = CappedCountPaginator
    show_full_result_count = False

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        verification_outcomes_recorded(application=obj.application)


@admin.register(ProgramOnboarding)
class ProgramOnboardingAdmin(TenancyFixedMixin, admin.ModelAdmin):
    list_display = ("program", "verification_provider")
    list_select_related = ("program",)


@admin.register(DocumentUpload)
class DocumentUploadAdmin(ExactSearchMixin, admin.ModelAdmin):
    list_display = ("key", "customer", "collection", "document_type", "content_type", "created_at")
    list_filter = ("collection", "sandbox", "program")
    exact_search_fields = ("key", "id", "customer")
    search_help_text = "An exact storage key, upload id or customer id."
    list_select_related = ("customer",)
    paginator = CappedCountPaginator
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # The record of what a customer uploaded: kept.
        return False


def applications_in_review() -> tuple[int, str]:
    count = Application.objects.filter(workflow_stage=Application.Stage.IN_REVIEW).count()
    url = reverse("admin:onboarding_application_changelist")
    return count, f"{url}?workflow_stage__exact={Application.Stage.IN_REVIEW}"


dashboard.counter_register(dashboard.APPLICATIONS_IN_REVIEW, applications_in_review)


@admin.register(Ubo)
class UboAdmin(ExactSearchMixin, admin.ModelAdmin):
    """UBOs of company applications. Their verification moves through the provider;
    compliance may reset it so the UBO can start again (links sent before stop working)."""

    list_display = ("id", "first_name", "last_name", "email", "status", "application", "updated_at")
    list_filter = ("status",)
    list_select_related = ("application",)
    exact_search_fields = ("id", "application")
    contains_search_fields = ("first_name", "last_name", "email")
    search_help_text = "Part of a name or e-mail (any case), or an exact UBO id or application id."
    readonly_fields = ("application", "status", "link_generation", "created_at", "updated_at")
    fields = ("application", "first_name", "last_name", "email", "status", "link_generation")
    paginator = CappedCountPaginator
    show_full_result_count = False
    actions = ("reset_verification",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # A UBO belongs to its company application, which names it.
        return False

    def has_reset_permission(self, request) -> bool:
        return request.user.has_perm("onboarding.reset_ubo")

    @admin.action(description="Reset the verification of selected UBOs", permissions=["reset"])
    def reset_verification(self, request, queryset):
        def reset(ubo: Ubo) -> str:
            ubo_verification_reset(application=ubo.application, ubo_ids=[str(ubo.id)])
            return "Verification reset to PENDING"

        apply_each(self, request, queryset, reset)
