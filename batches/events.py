"""The events batches write, in the transaction of the status change they report."""

from batches.models import Batch
from batches.presenters import batch_summary
from batches.selectors import ItemsSummary, item_summaries
from events.models import EventType
from events.recording import event_record

# Keyed by the status as stored (a plain string equal to the choice).
BY_STATUS: dict[str, EventType] = {
    Batch.Status.FUNDED: EventType.BATCH_FUNDED,
    Batch.Status.FUNDING_FAILED: EventType.BATCH_FUNDING_FAILED,
    Batch.Status.COMPLETED: EventType.BATCH_COMPLETED,
    Batch.Status.PARTIALLY_FAILED: EventType.BATCH_PARTIALLY_FAILED,
    Batch.Status.FAILED: EventType.BATCH_FAILED,
}


def batch_event(batch: Batch) -> None:
    """The batch as its list entry shows it with includeItemSummary=true. The
    customer that owns a batch and the custodian that submitted it see the event."""
    summary = item_summaries([batch.id]).get(batch.id, ItemsSummary())
    event_record(
        type=BY_STATUS[batch.status],
        program_id=batch.program_id,
        sandbox=batch.sandbox,
        customer_id=batch.owner_customer_id,
        custodian_id=batch.custodian_id,
        resource_type="batch",
        resource_id=batch.id,
        data=batch_summary(batch, summary=summary, management=False),
    )
