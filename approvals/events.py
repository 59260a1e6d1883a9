"""The events approvals write, in the transaction of the change they report."""

from approvals.models import Approval
from approvals.serializers import approval_data
from events.models import EventType
from events.recording import event_record


def approval_event(approval: Approval, type: EventType) -> None:
    """Seen by the initiating customer, or the custodian, as their own."""
    event_record(
        type=type,
        program_id=approval.program_id,
        sandbox=approval.sandbox,
        customer_id=approval.customer_id,
        custodian_id=approval.custodian_id,
        resource_type="approval",
        resource_id=approval.id,
        data=approval_data(approval),
    )
