"""Applications write events as they move stage and as verification outcomes
arrive; the customer lists them, nobody else does (events and webhooks)."""

import pytest

from bankapi.errors import ApiError
from events.models import Event
from onboarding.models import Application
from onboarding.services.applications import application_stage_move
from onboarding.services.verification import verification_outcomes_recorded

Stage = Application.Stage


def events_of(application: Application) -> list[tuple[str, str]]:
    rows = Event.objects.filter(resource_type="application", resource_id=str(application.id)).order_by("id")
    return [(event.type, event.data["application"]["workflowStage"]) for event in rows]


def test_each_stage_move_writes_stage_changed_with_the_application(applicant2):
    application = applicant2.application

    for stage in (Stage.IN_PROGRESS, Stage.SUBMITTED):
        application_stage_move(application=application, to_stage=stage)

    assert events_of(application) == [
        ("application.stage_changed", "IN_PROGRESS"),
        ("application.stage_changed", "SUBMITTED"),
    ]
    event = Event.objects.filter(resource_id=str(application.id)).last()
    assert event.customer_id == application.customer_id
    assert event.data["application"]["applicationId"] == str(application.id)
    assert event.data["ubos"] == []


def test_a_refused_move_writes_nothing(applicant2):
    application = applicant2.application
    with pytest.raises(ApiError):
        application_stage_move(application=application, to_stage=Stage.APPROVED)
    assert events_of(application) == []


def test_verification_outcomes_write_verification_updated_then_the_move_into_review(applicant2):
    application = applicant2.application
    application_stage_move(application=application, to_stage=Stage.IN_PROGRESS)
    application_stage_move(application=application, to_stage=Stage.SUBMITTED)

    verification_outcomes_recorded(application=application)

    assert events_of(application)[2:] == [
        ("application.verification_updated", "SUBMITTED"),
        ("application.stage_changed", "IN_REVIEW"),
    ]


def test_a_company_application_event_carries_its_ubos(business_applicant):
    application = business_applicant.application
    application_stage_move(application=application, to_stage=Stage.IN_PROGRESS)
    event = Event.objects.get(resource_id=str(application.id))
    assert len(event.data["ubos"]) == 2


def test_only_the_applicant_lists_its_application_events(api, applicant2, payer):
    application = applicant2.application
    application_stage_move(application=application, to_stage=Stage.IN_PROGRESS)
    own = applicant2.access
    other = payer.access
    query = {"type": "application.stage_changed"}

    mine = api.get("/v1/events", query, **own).json()["data"]["events"]
    theirs = api.get("/v1/events", query, **other).json()["data"]["events"]

    assert [e["data"]["application"]["applicationId"] for e in mine] == [str(application.id)]
    assert theirs == []
