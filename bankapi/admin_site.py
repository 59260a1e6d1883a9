"""The back-office admin site: Django's admin with a dashboard on its index and
the sign-in form named by the setting `ADMIN_LOGIN_FORM` (authn's: an
authenticator code too when `ADMIN_REQUIRE_TOTP` is on), every view of which is
audited: the changes made from it and the personal-data pages opened (`audit`)."""

from functools import update_wrapper

from django.conf import settings
from django.contrib import admin
from django.utils import timezone
from django.utils.module_loading import import_string

from audit.services import staff_acting, staff_view_record
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
        saves is recorded with before and after, and a record's page (its change
        or history page) that shows personal data is recorded as viewed."""
        guarded = super().admin_view(view, cacheable)
        model_admin = getattr(view, "__self__", None)
        records_views = isinstance(model_admin, admin.ModelAdmin) and view.__name__ in (
            "change_view",
            "history_view",
        )

        def audited(request, *args, **kwargs):
            with staff_acting(request.user, request.get_full_path()):
                response = guarded(request, *args, **kwargs)
            if records_views and request.method == "GET" and response.status_code == 200:
                shown = (getattr(response, "context_data", None) or {}).get("original") or (
                    getattr(response, "context_data", None) or {}
                ).get("object")
                if shown is not None:
                    staff_view_record(request.user, shown, request.get_full_path())
            return response

        return update_wrapper(audited, guarded)
