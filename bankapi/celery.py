import os
import sys
from typing import Any

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bankapi.settings")

app = Celery("bankapi")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _load_settings_or_stop(**kwargs: Any) -> None:
    """Load the settings before Celery reads them: a worker or beat started without a
    deployment's settings stops with one message naming them, as manage.py and gunicorn
    do, not with a traceback from inside Celery's command line."""
    from django.conf import settings

    from bankapi.env import DeploymentSettingsMissing

    try:
        settings.INSTALLED_APPS  # noqa: B018
    except DeploymentSettingsMissing as exc:
        sys.exit(str(exc))


app.on_configure.connect(_load_settings_or_stop)
