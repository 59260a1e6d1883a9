from django.apps import AppConfig


class CardsConfig(AppConfig):
    name = "cards"

    def ready(self) -> None:
        from bankapi.errors import error_codes_register
        from cards.errors import STATUSES

        error_codes_register(STATUSES)
