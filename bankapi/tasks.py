"""The kernel's Celery tasks: thin wrappers around its services, safe to run twice;
and `task_publish_after_commit`, the one way committed work queues its follow-up."""

import logging
from typing import Any

from celery import Task, shared_task
from django.db import transaction

from bankapi.idempotency import idempotency_records_purge
from bankapi.ops.metrics import TASK_PUBLISH_FAILURES
from bankapi.ops.outages import broker_unavailable, failure_log

logger = logging.getLogger(__name__)


def task_in_process(task: Task) -> bool:
    """Whether this run of `task` happens in the caller's process: no broker (the
    embedded default, where settings make every task eager) or a test. Nothing
    can wait in a queue there, so a task must not put work off to a later run
    (a retry with a countdown would run at once, inside the request that queued
    it). Every task asks this, and only this, to choose.
    """
    return bool(task.request.is_eager)


def tasks_run_in_process() -> bool:
    """Whether a task queued now would run in this process (no broker: the embedded
    default, or a test) rather than wait in a queue for a worker. For code that
    queues work, as `task_in_process` is for a task that runs."""
    from config.celery import app

    return bool(app.conf.task_always_eager)


def task_publish(task: Task, *args: Any, **options: Any) -> bool:
    """Queue `task` now (`apply_async` with `options`, an `eta` say). A broker that
    cannot be reached (Redis down) is logged in one line, counted in
    `bankapi_task_publish_failures_total` and otherwise ignored: the work this
    task would do is already committed and the beat sweep that looks for it
    queues it again. Answers whether it was queued.

    In-process (no broker: the embedded default, tests) the task runs here and now,
    and its own errors are raised as before."""
    if tasks_run_in_process():
        task.apply_async(args, **options)
        return True
    try:
        task.apply_async(args, **options)
    except Exception as error:  # noqa: BLE001 - whatever it is, the committed work stands
        TASK_PUBLISH_FAILURES.inc()
        # The broker away: one line per outage. Anything else is a bug: its traceback.
        kind = "broker" if broker_unavailable(error) else f"publish:{task.name}"
        failure_log(logger, kind, "Task %s not queued; the sweep will run it", task.name)
        return False
    return True


def task_publish_after_commit(task: Task, *args: Any, **options: Any) -> None:
    """Queue `task` once the current transaction commits (`task_publish`): a
    request whose change committed answers the success it earned whether or not
    the broker can be reached."""
    transaction.on_commit(lambda: task_publish(task, *args, **options))


@shared_task
def purge_idempotency_records() -> int:
    """Delete idempotency keys past their retention (7 days), for every domain."""
    return idempotency_records_purge()
