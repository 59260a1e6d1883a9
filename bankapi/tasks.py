"""The kernel's Celery tasks: thin wrappers around its services, safe to run twice."""

from celery import Task, shared_task

from bankapi.idempotency import idempotency_records_purge


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
    from bankapi.celery import app

    return bool(app.conf.task_always_eager)


@shared_task
def purge_idempotency_records() -> int:
    """Delete idempotency keys past their retention (7 days), for every domain."""
    return idempotency_records_purge()
