"""Tasks choose between in-process and queued behaviour by one question,
`bankapi.tasks.task_in_process`, answered by how this run was started."""

from bankapi.tasks import task_in_process
from events.tasks import deliveries_drain


def test_a_run_in_the_callers_process_is_in_process():
    deliveries_drain.push_request(is_eager=True)
    try:
        assert task_in_process(deliveries_drain) is True
    finally:
        deliveries_drain.pop_request()


def test_a_run_taken_from_the_queue_is_not():
    deliveries_drain.push_request(is_eager=False)
    try:
        assert task_in_process(deliveries_drain) is False
    finally:
        deliveries_drain.pop_request()
