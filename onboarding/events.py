"""The events onboarding writes, in the transaction of the change they report."""

from events.models import EventType
from events.recording import event_record
from onboarding.models import Application
from onboarding.serializers import ApplicationDetailSerializer


def application_event(application: Application, type: EventType) -> None:
    """The application as `GET /v1/applications/{applicationId}` shows it."""
    ubos = application.ubos.all() if application.is_company else []
    event_record(
        type=type,
        program_id=application.program_id,
        sandbox=application.sandbox,
        customer_id=application.customer_id,
        resource_type="application",
        resource_id=application.id,
        data=ApplicationDetailSerializer({"application": application, "ubos": ubos}).data,
    )
