import os
import sys

from django.core.wsgi import get_wsgi_application

from config.env import DeploymentSettingsMissing

# Exit status gunicorn reads as "the worker cannot boot": it stops instead of
# starting worker after worker.
WORKER_BOOT_ERROR = 3

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
try:
    application = get_wsgi_application()
except DeploymentSettingsMissing as exc:
    # One message naming every missing setting, not a traceback.
    print(exc, file=sys.stderr)
    sys.exit(WORKER_BOOT_ERROR)
