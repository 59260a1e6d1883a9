from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"

    def ready(self) -> None:
        from bankapi.errors import error_codes_register
        from payments.errors import STATUSES

        error_codes_register(STATUSES)
