"""Applications: creation and the workflow stage.

Stages run NEW -> IN_PROGRESS -> SUBMITTED -> IN_REVIEW -> APPROVED or REJECTED.
The applicant's legal acceptance moves NEW to IN_PROGRESS; operators move the
rest in admin, and the verification provider moves SUBMITTED to IN_REVIEW when it
reports outcomes. Every move goes through `application_stage_move`.
"""

from django.db import transaction

from bankapi.errors import ApiError, ErrorCode
from bankapi.idempotency import Fingerprint
from bankapi.models import Customer
from events.models import EventType
from onboarding.events import application_event
from onboarding.models import Application
from onboarding.providers import active_provider_name

Stage = Application.Stage
OPERATION = "applications.create"
MISMATCH_MESSAGE = "This Idempotency-Key was used for a different application (isCompany or email)."

NEXT_STAGES: dict[str, set[str]] = {
    Stage.NEW: {Stage.IN_PROGRESS},
    Stage.IN_PROGRESS: {Stage.SUBMITTED},
    Stage.SUBMITTED: {Stage.IN_REVIEW},
    Stage.IN_REVIEW: {Stage.APPROVED, Stage.REJECTED},
    Stage.APPROVED: set(),
    Stage.REJECTED: set(),
}


def application_create(*, customer: Customer, is_company: bool, applicant_email: str) -> Application:
    return Application.objects.create(
        program_id=customer.program_id,
        sandbox=customer.sandbox,
        customer=customer,
        is_company=is_company,
        applicant_email=applicant_email,
        verification_provider=active_provider_name(customer.program),
    )


def application_fingerprint(*, is_company: bool, email: str | None) -> Fingerprint:
    """What a create's Idempotency-Key is bound to: the kind of application and
    the e-mail address sent (None when the signed-in user's is used)."""
    return Fingerprint(
        {"is_company": is_company, "email": email},
        # Records written before fingerprints had a version used the body's names.
        earlier={None: {"isCompany": is_company, "email": email}},
    )


def application_stage_move(*, application: Application, to_stage: str) -> Application:
    """Move the application one step along its workflow, or refuse with INVALID_STATE."""
    with transaction.atomic():
        # Locked so that two moves (an operator and the provider, say) cannot both
        # start from the same stage.
        locked = Application.objects.select_for_update().get(pk=application.pk)
        if to_stage not in NEXT_STAGES[locked.workflow_stage]:
            raise ApiError(
                ErrorCode.INVALID_STATE,
                f"An application in {locked.workflow_stage} cannot move to {to_stage}.",
            )
        locked.workflow_stage = to_stage
        locked.save(update_fields=["workflow_stage", "updated_at"])
        application_event(locked, EventType.APPLICATION_STAGE_CHANGED)
    application.refresh_from_db()
    return application
