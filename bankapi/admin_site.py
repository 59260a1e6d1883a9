"""The back-office admin site: Django's admin with a dashboard on its index and
the sign-in form named by the setting `ADMIN_LOGIN_FORM` (authn's: an
authenticator code too when `ADMIN_REQUIRE_TOTP` is on)."""

from django.conf import settings
from django.contrib import admin
from django.utils import timezone
from django.utils.module_loading import import_string

from bankapi.dashboard import dashboard_counters, dashboard_volume


class BankAdminSite(admin.AdminSite):
    site_header = "Bank API back office"
    site_title = "Bank API back office"
    index_title = "Back office"
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
            "dashboard_volume": dashboard_volume(),
            "dashboard_day": timezone.now().date(),
            **(extra_context or {}),
        }
        return super().index(request, context)
