from django.apps import AppConfig


class OnboardingConfig(AppConfig):
    name = "onboarding"

    def ready(self) -> None:
        from bankapi.errors import error_codes_register
        from onboarding.errors import STATUSES

        error_codes_register(STATUSES)
