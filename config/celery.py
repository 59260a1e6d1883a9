import inspect
import logging.config
import os
import sys
from typing import Any

from celery import Celery, Task, signals

from bankapi.ops import logs

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class LeasedTask(Task):  # type: ignore[misc]
    """Every task of the service. One named in beat's schedule runs under its
    entry's lease (`bankapi.ops.periodic.periodic_run`): a run that finds another
    still going does nothing, and a success is stamped for /metrics. Only beat
    starts those tasks; commands and the sandbox call their services directly.
    A task whose function takes a `lease` parameter is given the lease (what
    its run covers, its heartbeat)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from bankapi.ops.periodic import periodic_entry_of, periodic_run

        entry = periodic_entry_of(self.name)
        if entry is None:
            return super().__call__(*args, **kwargs)
        wants_lease = "lease" in inspect.signature(self.run).parameters
        return periodic_run(
            entry,
            lambda lease: super(LeasedTask, self).__call__(
                *args, **kwargs, **({"lease": lease} if wants_lease else {})
            ),
        )


app = Celery("bankapi", task_cls=LeasedTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Tasks sent to a queue other than the default (`CELERY_TASK_DEFAULT_QUEUE`), by
# the start of their name: the setting (without its CELERY_ prefix) naming the
# queue. Webhook deliveries have their own (`CELERY_WEBHOOKS_QUEUE`, "webhooks"),
# read by workers of their own (deploy/Procfile's `webhooks`): a slow or failing
# receiver never delays settlement or anything else on the default queue.
QUEUE_SETTING_OF_TASKS = {"events.tasks.": "webhooks_queue"}


def task_route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **rest: Any) -> dict | None:
    """The queue of a task (`CELERY_TASK_ROUTES`): read from the configuration at
    each send, so a test's worker can be given queues of its own."""
    for prefix, setting in QUEUE_SETTING_OF_TASKS.items():
        if name.startswith(prefix):
            return {"queue": app.conf[setting]}
    return None


# A task logs the request id (and tenant ids) of the request that queued it.
signals.before_task_publish.connect(logs.task_context_publish, weak=False)
signals.task_prerun.connect(logs.task_context_enter, weak=False)
signals.task_postrun.connect(logs.task_context_exit, weak=False)


def _logging_from_django_settings(**kwargs: Any) -> None:
    """Workers log as the web processes do (format, filters, redaction), instead
    of Celery replacing the root logger's handlers with its own."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


signals.setup_logging.connect(_logging_from_django_settings, weak=False)


def _load_settings_or_stop(**kwargs: Any) -> None:
    """Load the settings before Celery reads them: a worker or beat started without a
    deployment's settings stops with one message naming them, as manage.py and gunicorn
    do, not with a traceback from inside Celery's command line."""
    from django.conf import settings

    from config.env import DeploymentSettingsMissing

    try:
        settings.INSTALLED_APPS  # noqa: B018
    except DeploymentSettingsMissing as exc:
        sys.exit(str(exc))


app.on_configure.connect(_load_settings_or_stop)
