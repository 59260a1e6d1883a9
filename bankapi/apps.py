from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.db.models.signals import post_migrate

from bankapi.ops.tracing import tracing_configured, tracing_start


class BankapiConfig(AppConfig):
    name = "bankapi"
    verbose_name = "Programs and accounts"

    def ready(self) -> None:
        from bankapi.backoffice import groups_sync_after_migrate
        from bankapi.ops.connection_health import connection_health_install

        post_migrate.connect(groups_sync_after_migrate, dispatch_uid="bankapi.backoffice.groups")
        _periodic_gauge_register()
        connection_health_install()
        if tracing_configured():
            tracing_start()


class BankAdminConfig(admin_apps.AdminConfig):
    """Django admin with the back-office site (dashboard, TOTP sign-in)."""

    default = False
    default_site = "bankapi.backoffice.admin_site.BankAdminSite"


def _periodic_gauge_register() -> None:
    from bankapi.ops.metrics import scrape_gauge_register
    from bankapi.ops.periodic import periodic_last_successes

    scrape_gauge_register(
        "bankapi_periodic_task_last_success_timestamp_seconds",
        "When each periodic task (beat's entry) last ran to the end, in unix seconds (0: never yet).",
        periodic_last_successes,
        label="task",
    )
