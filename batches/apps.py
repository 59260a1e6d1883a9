from django.apps import AppConfig


class BatchesConfig(AppConfig):
    name = "batches"

    def ready(self) -> None:
        from bankapi.errors import error_codes_register
        from bankapi.ops.metrics import scrape_gauge_register
        from batches.errors import STATUSES
        from batches.selectors import batches_oldest_stall_seconds

        scrape_gauge_register(
            "bankapi_batch_oldest_stall_seconds",
            "Seconds since the unfinished batch waiting longest last progressed (0: every batch finished).",
            batches_oldest_stall_seconds,
        )
        error_codes_register(STATUSES)
