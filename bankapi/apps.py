from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.db.models.signals import post_migrate

from bankapi.tracing import tracing_configured, tracing_start


class BankapiConfig(AppConfig):
    name = "bankapi"
    verbose_name = "Programs and accounts"

    def ready(self) -> None:
        from bankapi.backoffice import groups_sync_after_migrate
        from bankapi.connection_health import connection_health_install

        post_migrate.connect(groups_sync_after_migrate, dispatch_uid="bankapi.backoffice.groups")
        connection_health_install()
        if tracing_configured():
            tracing_start()


class BankAdminConfig(admin_apps.AdminConfig):
    """Django admin with the back-office site (dashboard, TOTP sign-in)."""

    default = False
    default_site = "bankapi.admin_site.BankAdminSite"
