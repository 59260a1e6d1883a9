"""The events payments write, in the transaction of the change they report."""

from events.models import Event, EventType
from events.recording import event_new, events_record
from payments.models import PaymentRequest, ScheduledPayment
from payments.serializers import PaymentRequestSerializer, ScheduledPaymentSerializer, payment_request_data

# The event an accepted payment request reports, by the status acceptance gave
# it: held for review at the program's threshold, else accepted. Every path that
# accepts payments (one at a time, in one statement, in bulk) reads it here.
ACCEPTED_EVENT_TYPES: dict[str, EventType] = {
    PaymentRequest.Status.PENDING: EventType.PAYMENT_REQUEST_ACCEPTED,
    PaymentRequest.Status.PENDING_TM: EventType.PAYMENT_REQUEST_HELD,
}


def accepted_event_type(request: PaymentRequest) -> EventType:
    """The event type of a payment request just accepted (`ACCEPTED_EVENT_TYPES`)."""
    return ACCEPTED_EVENT_TYPES[request.status]


def _payment_request_event(request: PaymentRequest, type: EventType, data: dict | None = None) -> Event:
    return event_new(
        type=type,
        program_id=request.program_id,
        sandbox=request.sandbox,
        customer_id=request.customer_id,
        resource_type="payment_request",
        resource_id=request.id,
        data=payment_request_data(request) if data is None else data,
    )


def payment_request_event(request: PaymentRequest, type: EventType) -> None:
    events_record([_payment_request_event(request, type)])


def payment_request_event_new(request: PaymentRequest, type: EventType) -> Event:
    """The unsaved event of `payment_request_event`, for a writer that writes it
    in a statement of its own (`events.recording.event_insert_sql`)."""
    return _payment_request_event(request, type)


def payment_request_events(requests: list[PaymentRequest], type: EventType) -> None:
    """The same event of many payment requests (a settlement chunk), in one INSERT."""
    events_record([_payment_request_event(request, type) for request in requests])


def payment_requests_accepted(requests: list[PaymentRequest]) -> None:
    """accepted, or held at the review threshold, for payments made in bulk (a batch)."""
    # One list serializer: its fields are built once, not once per request.
    payloads = PaymentRequestSerializer(requests, many=True).data
    events_record(
        [
            _payment_request_event(request, accepted_event_type(request), data)
            for request, data in zip(requests, payloads, strict=True)
        ]
    )


def scheduled_payment_event_new(schedule: ScheduledPayment, type: EventType) -> Event:
    """The unsaved event of a schedule (`events_record` writes many at once)."""
    return event_new(
        type=type,
        program_id=schedule.program_id,
        sandbox=schedule.sandbox,
        customer_id=schedule.customer_id,
        resource_type="scheduled_payment",
        resource_id=schedule.id,
        data=ScheduledPaymentSerializer(schedule).data,
    )
