"""The back-office admin site: Django's admin with a dashboard on its index and
the sign-in form named by the setting `ADMIN_LOGIN_FORM` (authn's: an
authenticator code too when `ADMIN_REQUIRE_TOTP` is on; DESIGN 15)."""

from django.conf import settings
from django.contrib import admin
from django.utils import timezone
from django.utils.module_loading import import_string

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

    def index(self, request, extra_context=None):
        context = {
            "dashboard_counters": dashboard_counters(),
            "dashboard_facts": dashboard_facts(),
            "dashboard_volume": dashboard_volume(),
            "dashboard_day": timezone.now().date(),
            **(extra_context or {}),
        }
        return super().index(request, context)
