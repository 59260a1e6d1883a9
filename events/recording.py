"""Events written with the change that caused them (the outbox).

`event_record` is what every domain calls inside the transaction of its change:
the event row exists if and only if the change commits. What happens to it after
commit depends on where tasks run. Without a broker (the embedded default, tests)
its fan-out runs in-process once the change commits, so a subscribed endpoint gets
it with no worker running. With a broker the request does nothing more: the outbox
relay of the Celery workers (`events/relay.py`) finds the row and fans it out, so
no publish to the broker sits in the request's path.
"""

import uuid
from typing import Any

from django.db import transaction

from bankapi.ops.logs import log_request_id
from bankapi.row_objects import row_new
from bankapi.rows import insert_rows, insert_select_sql, rows_pre_save, rows_stored
from bankapi.tasks import task_publish, tasks_run_in_process
from events.models import Event, EventType
from events.tasks import events_fan_out


def _fan_out_in_process(event_ids: list[int]) -> None:
    task_publish(events_fan_out, event_ids)


def event_record(
    *,
    type: EventType,
    program_id: uuid.UUID,
    sandbox: bool,
    resource_type: str,
    resource_id: Any,
    data: dict[str, Any],
    customer_id: uuid.UUID | None = None,
    custodian_id: uuid.UUID | None = None,
) -> Event:
    """Write an event in the caller's transaction: it exists iff the change commits.

    Its delivery follows its commit (see the module's docstring); a rolled-back
    change leaves neither.
    """
    return events_record([event_new(**locals())])[0]


def event_new(
    *,
    type: EventType,
    program_id: uuid.UUID,
    sandbox: bool,
    resource_type: str,
    resource_id: Any,
    data: dict[str, Any],
    customer_id: uuid.UUID | None = None,
    custodian_id: uuid.UUID | None = None,
) -> Event:
    """An unsaved event, for `events_record`; it keeps the id of the request
    running now, which its fan-out and deliveries log."""
    return row_new(
        Event,
        type=type,
        program_id=program_id,
        sandbox=sandbox,
        customer_id=customer_id,
        custodian_id=custodian_id,
        resource_type=resource_type,
        resource_id=str(resource_id),
        data=data,
        request_id=log_request_id(),
    )


def events_record(events: list[Event]) -> list[Event]:
    """Write many unsaved events at once (a batch's payments), in the caller's
    transaction; without a broker, one in-process fan-out for all of them after commit."""
    if len(events) == 1:
        # The common case (one change, one event): SQL written once, not compiled.
        insert_rows(events)
        made = events
    else:
        made = Event.objects.bulk_create(events, batch_size=1000)
    ids = [event.id for event in made]
    if ids and tasks_run_in_process():
        transaction.on_commit(lambda: _fan_out_in_process(ids))
    return made


def event_insert_sql(event: Event, source: str, connection: Any) -> tuple[str, list[Any]]:
    """The INSERT of an unsaved event as a step of a larger statement
    (`bankapi.rows.insert_select_sql`: written if `source` has a row), `RETURNING`
    its id; `events_written` once that statement wrote it."""
    rows_pre_save([event])
    return insert_select_sql([event], source, connection)


def events_written(events: list[Event], ids: list[int], connection: Any) -> None:
    """Events a larger statement wrote (`event_insert_sql`), with the ids it
    returned: saved, and fanned out after commit as `events_record` does."""
    for event, event_id in zip(events, ids, strict=True):
        event.id = event_id
    rows_stored(events, connection)
    if ids and tasks_run_in_process():
        transaction.on_commit(lambda: _fan_out_in_process(ids))
