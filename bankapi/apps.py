from django.apps import AppConfig


class BankapiConfig(AppConfig):
    name = "bankapi"
    verbose_name = "Programs and accounts"
