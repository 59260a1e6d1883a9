from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events and webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from celery.signals import worker_ready, worker_shutdown

        from bankapi.ops.metrics import scrape_gauge_register
        from events.relay import relay_start, relay_stop

        # Every Celery worker runs the outbox relay beside its tasks.
        worker_ready.connect(relay_start, weak=False)
        worker_shutdown.connect(relay_stop, weak=False)
        from events.selectors import outbox_oldest_pending_seconds

        scrape_gauge_register(
            "bankapi_outbox_oldest_pending_seconds",
            "Age in seconds of the oldest event not yet delivered to an enabled webhook endpoint (0: none).",
            outbox_oldest_pending_seconds,
        )
