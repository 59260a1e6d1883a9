"""The events approvals write, in the transaction of the change they report."""

from approvals.models import Approval
from approvals.serializers import approval_data
from events.models import EventType
from events.recording import event_new, events_record


def approval_event(approval: Approval, type: EventType) -> None:
    """Seen by the initiating customer, or the custodian, as their own."""
    approval_events([approval], type)


def approval_events(approvals: list[Approval], type: EventType) -> None:
    """The same event of many approvals (an expiry run's chunk), in one INSERT."""
    events_record(
        [
            event_new(
                type=type,
                program_id=approval.program_id,
                sandbox=approval.sandbox,
                customer_id=approval.customer_id,
                custodian_id=approval.custodian_id,
                resource_type="approval",
                resource_id=approval.id,
                data=approval_data(approval),
            )
            for approval in approvals
        ]
    )
