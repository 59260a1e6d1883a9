"""The events a batch writes, in the transaction of the status change they report."""

from batches.models import Batch
from batches.presenters import batch_summary
from batches.selectors import item_summaries
from events.models import EventType
from events.services import event_record

STATUS_EVENTS = {
    Batch.Status.FUNDED: EventType.BATCH_FUNDED,
    Batch.Status.FUNDING_FAILED: EventType.BATCH_FUNDING_FAILED,
    Batch.Status.COMPLETED: EventType.BATCH_COMPLETED,
    Batch.Status.PARTIALLY_FAILED: EventType.BATCH_PARTIALLY_FAILED,
    Batch.Status.FAILED: EventType.BATCH_FAILED,
}


def batch_status_event(batch: Batch) -> None:
    """The event of the batch's new status, if it has one: `data` is the batch as
    the list shows it with includeItemSummary=true. Seen by the batch's owner:
    its custodian, or the customer that submitted it."""
    event_type = STATUS_EVENTS.get(batch.status)
    if event_type is None:
        return
    event_record(
        type=event_type,
        program_id=batch.program_id,
        sandbox=batch.sandbox,
        customer_id=batch.owner_customer_id,
        custodian_id=batch.custodian_id,
        resource_type="batch",
        resource_id=batch.id,
        data=batch_summary(batch, summary=item_summaries([batch.id]).get(batch.id, {}), management=False),
    )
