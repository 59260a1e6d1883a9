"""The back-office admin site: Django's admin with a dashboard on its index and
the sign-in form named by the setting `ADMIN_LOGIN_FORM` (authn's: an
authenticator code too when `ADMIN_REQUIRE_TOTP` is on), every view of which is
audited: the changes made from it and the personal-data pages opened (`audit`)."""

from functools import update_wrapper
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone
from django.utils.module_loading import import_string

from audit.services import staff_acting, staff_list_view_record, staff_view_record
from bankapi.dashboard import dashboard_counters, dashboard_facts, dashboard_volume


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
            with staff_acting(request.user, request.get_full_path()):
                response = guarded(request, *args, **kwargs)
            if shows_model is not None and response.status_code == 200:
                record_shown(request, shows_model, getattr(response, "context_data", None) or {})
            return response

        return update_wrapper(audited, guarded)


# The ModelAdmin views whose pages show records: a record's own pages, and its
# list (with its search, and the pages its actions ask about, posted to it).
SHOWING_VIEWS = ("changelist_view", "change_view", "history_view", "delete_view")


def record_shown(request: HttpRequest, model: type[Model], context: dict[str, Any]) -> None:
    """Record, for the audit, the records of personal data this page showed."""
    page = request.get_full_path()
    changelist = context.get("cl")
    if changelist is not None:
        staff_list_view_record(request.user, model, changelist.result_list, changelist.query, page)
        return
    shown = context.get("original") or context.get("object")
    if isinstance(shown, Model):
        staff_view_record(request.user, shown, page)
        return
    # An action's intermediate page (ours and Django's delete_selected) lists the chosen rows.
    rows = context.get("objects", context.get("queryset"))
    if rows is not None:
        staff_list_view_record(request.user, model, rows, "", page)
