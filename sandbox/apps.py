from django.apps import AppConfig


class SandboxConfig(AppConfig):
    """The sandbox as a world: customers on demand and test clocks."""

    name = "sandbox"
    default_auto_field = "django.db.models.BigAutoField"
