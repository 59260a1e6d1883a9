from django.apps import AppConfig


class EventsConfig(AppConfig):
    name = "events"
    verbose_name = "Events and webhooks"
    default_auto_field = "django.db.models.BigAutoField"
