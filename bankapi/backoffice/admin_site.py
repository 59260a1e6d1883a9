"""The back-office admin site: Django's admin with a dashboard on its index and
the sign-in form named by the setting `ADMIN_LOGIN_FORM` (authn's: an
authenticator code too when `ADMIN_REQUIRE_TOTP` is on), every view of which is
audited: the changes made from it and the personal-data pages opened. The audit
is the `audit` app's, which registers it here when ready (`audit_register`): the
kernel imports no app."""

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import update_wrapper
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone
from django.utils.module_loading import import_string

from bankapi.backoffice.dashboard import dashboard_counters, dashboard_facts, dashboard_volume


@dataclass(frozen=True)
class Audit:
    """How the back office is audited: `acting(user, page)` wraps a view so what
    it saves is recorded as that staff user's; `view_record(user, record, page)`
    records a record's page opened; `list_view_record(user, model, rows,
    search, page)` the records a list (or an action's page) showed."""

    acting: Callable[[Any, str], AbstractContextManager[None]]
    view_record: Callable[[Any, Any, str], object]
    list_view_record: Callable[[Any, type[Model], Any, str, str], object]


_audit: list[Audit] = []


def audit_register(audit: Audit) -> None:
    """The audit every back-office view runs under (one; a second replaces it)."""
    _audit[:] = [audit]


def _registered_audit() -> Audit:
    # No view runs unaudited: a site without an audit registered refuses to serve.
    if not _audit:
        raise ImproperlyConfigured("The back office needs an audit: install the `audit` app.")
    return _audit[0]


class BankAdminSite(admin.AdminSite):
    site_header = "Bank API back office"
    site_title = "Bank API back office"
    index_title = "Back office"
    # "View site": the API's own pages (the interactive reference), not a JSON 404 at `/`.
    site_url = "/v1/docs"
    # Every page has the breadcrumbs and the index lists the apps: the sidebar's
    # 280 px go to the tables instead.
    enable_nav_sidebar = False
    index_template = "admin/bankapi/index.html"
    login_template = "admin/bankapi/login.html"

    @property
    def login_form(self):  # type: ignore[override]  # read from settings when asked
        return import_string(settings.ADMIN_LOGIN_FORM)

    def login(self, request, extra_context=None):
        response = super().login(request, extra_context)
        # The form says so when every password-check slot stayed taken: 429, like the API.
        form = (getattr(response, "context_data", None) or {}).get("form")
        retry_after = getattr(form, "retry_after", None)
        if retry_after is not None:
            response.status_code = 429
            response["Retry-After"] = retry_after
        return response

    def index(self, request, extra_context=None):
        context = {
            "dashboard_counters": dashboard_counters(),
            "dashboard_facts": dashboard_facts(),
            "dashboard_volume": dashboard_volume(),
            "dashboard_day": timezone.now().date(),
            **(extra_context or {}),
        }
        return super().index(request, context)

    def admin_view(self, view, cacheable=False):
        """Every back-office view runs as its staff user for the audit: what it
        saves is recorded with before and after, and every page that shows
        personal data is recorded as viewed (`record_shown`)."""
        guarded = super().admin_view(view, cacheable)
        model_admin = getattr(view, "__self__", None)
        shows_model = (
            model_admin.model
            if isinstance(model_admin, admin.ModelAdmin) and view.__name__ in SHOWING_VIEWS
            else None
        )

        def audited(request, *args, **kwargs):
            audit = _registered_audit()
            with audit.acting(request.user, request.get_full_path()):
                response = guarded(request, *args, **kwargs)
            if shows_model is not None and response.status_code == 200:
                record_shown(audit, request, shows_model, getattr(response, "context_data", None) or {})
            return response

        return update_wrapper(audited, guarded)


# The ModelAdmin views whose pages show records: a record's own pages, and its
# list (with its search, and the pages its actions ask about, posted to it).
SHOWING_VIEWS = ("changelist_view", "change_view", "history_view", "delete_view")


def record_shown(audit: Audit, request: HttpRequest, model: type[Model], context: dict[str, Any]) -> None:
    """Record, for the audit, the records of personal data this page showed."""
    page = request.get_full_path()
    changelist = context.get("cl")
    if changelist is not None:
        audit.list_view_record(request.user, model, changelist.result_list, changelist.query, page)
        return
    shown = context.get("original") or context.get("object")
    if isinstance(shown, Model):
        audit.view_record(request.user, shown, page)
        return
    # An action's intermediate page (ours and Django's delete_selected) lists the chosen rows.
    rows = context.get("objects", context.get("queryset"))
    if rows is not None:
        audit.list_view_record(request.user, model, rows, "", page)
