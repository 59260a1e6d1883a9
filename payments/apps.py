from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "payments"

    def ready(self) -> None:
        from bankapi.errors import error_codes_register
        from payments.errors import STATUSES

        error_codes_register(STATUSES)

        from bankapi.ops.metrics import scrape_gauge_register
        from payments.services.settlement import payments_settle_oldest_pending_seconds

        scrape_gauge_register(
            "bankapi_settlement_lag_seconds",
            "Age in seconds of the oldest production payment request waiting to settle (0: none).",
            payments_settle_oldest_pending_seconds,
        )
