from django.contrib import admin

from audit.models import ChangeRecord, StaffView
from bankapi.backoffice.admin_base import ExactSearchMixin, ReadOnlyModelAdmin


@admin.register(ChangeRecord)
class ChangeRecordAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Back-office changes with their before and after; also shown on each
    record's own history page. Nobody adds, edits or deletes them."""

    list_display = ("at", "actor_email", "action", "content_type", "object_repr", "page")
    list_filter = ("action", "content_type")
    exact_search_fields = ("object_id", "actor_email")
    search_help_text = "An exact record id or staff e-mail."
    list_select_related = ("content_type",)
    fields = (
        "at",
        "actor_email",
        "action",
        "content_type",
        "object_id",
        "object_repr",
        "before",
        "after",
        "page",
    )


@admin.register(StaffView)
class StaffViewAdmin(ExactSearchMixin, ReadOnlyModelAdmin):
    """Who opened which page of a customer's personal data, a card or a document,
    and which records a list of them showed for which search."""

    list_display = ("at", "actor_email", "content_type", "object_repr", "search", "page")
    list_filter = ("content_type",)
    exact_search_fields = ("object_id", "actor_email")
    search_help_text = "An exact record id or staff e-mail."
    list_select_related = ("content_type",)
    fields = ("at", "actor_email", "content_type", "object_id", "object_repr", "search", "page")
