"""An outage of the database or Redis writes no traceback in any process: what
Celery logs for a task that met the database away, what beat logs when it
cannot send a task with Redis away, and each /readyz probe answered 503 become
one warning line per outage with a count of those left out. A bug keeps its
traceback."""

import logging
import uuid

import pytest
from celery import Celery, shared_task
from celery.beat import ScheduleEntry, Scheduler

from bankapi.ops.outages import OUTAGE_LOG_INTERVAL, _throttle, outages_forget
from tests.ops.test_outages import _refused, database_away
from tests.proof.processes import free_port


@pytest.fixture(autouse=True)
def _fresh_outage_log():
    outages_forget()
    # Celery logs the source of each task's signature at DEBUG the first time a
    # process builds it (whichever test that is): not what these tests count.
    quiet = logging.getLogger("celery.utils.functional")
    level = quiet.level
    quiet.setLevel(logging.INFO)
    yield
    quiet.setLevel(level)
    outages_forget()


@shared_task(name="tests.ops.meets_the_database_away")
def meets_the_database_away() -> None:
    raise _refused()


@shared_task(name="tests.ops.has_a_bug")
def has_a_bug() -> None:
    raise ValueError("a bug of ours")


def _run_as_a_worker_would(task) -> None:
    """Run through Celery's tracer, which logs a failed task as a worker does."""
    result = task.apply(throw=False, task_id=str(uuid.uuid4()))
    assert result.failed()


def test_tasks_meeting_the_database_away_log_one_line_and_a_count_not_tracebacks(console):
    for _ in range(5):
        _run_as_a_worker_would(meets_the_database_away)

    lines = console.lines()
    assert "Traceback" not in console.text()
    assert len(lines) == 1, lines
    assert " WARNING celery.app.trace " in lines[0]
    assert "Database unavailable: Task tests.ops.meets_the_database_away" in lines[0]
    assert "OperationalError" in lines[0]

    # The next line of the outage, once the interval has passed, says how many were left out.
    _throttle.last["database:celery.app.trace"] -= OUTAGE_LOG_INTERVAL + 1
    _run_as_a_worker_would(meets_the_database_away)
    assert "(4 more like it in the last 10 s not logged)" in console.lines()[-1]


def test_a_task_failing_on_a_bug_keeps_its_traceback(console):
    _run_as_a_worker_would(has_a_bug)

    assert "Traceback" in console.text() and "ValueError: a bug of ours" in console.text()
    assert " ERROR celery.app.trace " in console.text()


def test_beat_unable_to_send_a_task_with_redis_away_logs_one_line(console):
    nothing_listens = Celery("beat-test", broker=f"redis://127.0.0.1:{free_port()}/0", set_as_current=False)
    nothing_listens.conf.broker_connection_timeout = 0.5
    scheduler = Scheduler(app=nothing_listens, lazy=True)
    entry = ScheduleEntry(
        name="sweep", task="events.tasks.deliveries_sweep", schedule=60.0, app=nothing_listens
    )

    for _ in range(3):
        scheduler.apply_entry(entry, producer=None)

    text = console.text()
    assert "Traceback" not in text and 'File "' not in text
    outage = [line for line in console.lines() if "Broker unavailable" in line]
    assert len(outage) == 1, console.lines()
    assert " WARNING celery.beat " in outage[0] and "Couldn't apply scheduled task sweep" in outage[0]


@pytest.mark.django_db
def test_readyz_probed_while_the_database_is_away_logs_one_warning(api, monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    with database_away(monkeypatch):
        answers = [api.get("/readyz").status_code for _ in range(5)]

    assert answers == [503] * 5
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "Not ready: the database does not answer" in warnings[0].getMessage()


def test_a_worker_retrying_its_broker_writes_one_warning_not_an_error_per_attempt(console):
    from redis.exceptions import ConnectionError as RedisConnectionError

    consumer = logging.getLogger("celery.worker.consumer.consumer")
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    for seconds in (2, 4, 6):
        # As Celery's consumer logs each attempt: the error among the arguments, no traceback.
        consumer.error(
            "consumer: Cannot connect to %s: %s.\nTrying again in %d seconds...", "redis://", refused, seconds
        )

    lines = console.lines()
    assert len(lines) == 1, lines
    assert " WARNING celery.worker.consumer.consumer " in lines[0]
    assert "Broker unavailable: consumer: Cannot connect to redis://" in lines[0]
