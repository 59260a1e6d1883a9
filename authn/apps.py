from django.apps import AppConfig


class AuthnConfig(AppConfig):
    name = "authn"
    verbose_name = "Authentication"
