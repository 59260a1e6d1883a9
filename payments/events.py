"""The events payments write, in the transaction of the change they report."""

from events.models import EventType
from events.services import event_record
from payments.models import PaymentRequest, ScheduledPayment
from payments.serializers import PaymentRequestSerializer, ScheduledPaymentSerializer


def payment_request_event(request: PaymentRequest, type: EventType) -> None:
    event_record(
        type=type,
        program_id=request.program_id,
        sandbox=request.sandbox,
        customer_id=request.customer_id,
        resource_type="payment_request",
        resource_id=request.id,
        data=PaymentRequestSerializer(request).data,
    )


def scheduled_payment_event(schedule: ScheduledPayment, type: EventType) -> None:
    event_record(
        type=type,
        program_id=schedule.program_id,
        sandbox=schedule.sandbox,
        customer_id=schedule.customer_id,
        resource_type="scheduled_payment",
        resource_id=schedule.id,
        data=ScheduledPaymentSerializer(schedule).data,
    )
