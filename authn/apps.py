from django.apps import AppConfig


class AuthnConfig(AppConfig):
    name = "authn"
    verbose_name = "Authentication"

    def ready(self) -> None:
        from authn.errors import STATUSES
        from bankapi.errors import error_codes_register

        error_codes_register(STATUSES)
