"""workflowStage: NEW -> IN_PROGRESS -> SUBMITTED -> IN_REVIEW -> APPROVED or REJECTED."""

import pytest

from bankapi.errors import ApiError
from onboarding.models import Application
from onboarding.services.applications import application_stage_move
from onboarding.services.verification import verification_outcomes_recorded

Stage = Application.Stage


def test_an_application_walks_its_stages_to_approval(applicant2):
    application = applicant2.application

    for stage in (Stage.IN_PROGRESS, Stage.SUBMITTED, Stage.IN_REVIEW, Stage.APPROVED):
        application_stage_move(application=application, to_stage=stage)
        assert Application.objects.get(id=application.id).workflow_stage == stage


@pytest.mark.parametrize(
    "path, refused",
    [
        ([], Stage.SUBMITTED),
        ([], Stage.APPROVED),
        ([Stage.IN_PROGRESS], Stage.IN_REVIEW),
        ([Stage.IN_PROGRESS, Stage.SUBMITTED, Stage.IN_REVIEW, Stage.REJECTED], Stage.APPROVED),
        ([Stage.IN_PROGRESS], Stage.NEW),
    ],
)
def test_a_move_out_of_order_is_refused_and_changes_nothing(applicant2, path, refused):
    application = applicant2.application
    for stage in path:
        application_stage_move(application=application, to_stage=stage)
    before = Application.objects.get(id=application.id).workflow_stage

    with pytest.raises(ApiError) as refusal:
        application_stage_move(application=application, to_stage=refused)

    assert refusal.value.code == "INVALID_STATE"
    assert Application.objects.get(id=application.id).workflow_stage == before


def test_provider_outcomes_move_a_submitted_application_into_review(applicant2):
    application = applicant2.application
    verification_outcomes_recorded(application=application)
    assert Application.objects.get(id=application.id).workflow_stage == Stage.NEW

    application_stage_move(application=application, to_stage=Stage.IN_PROGRESS)
    application_stage_move(application=application, to_stage=Stage.SUBMITTED)
    verification_outcomes_recorded(application=application)

    assert Application.objects.get(id=application.id).workflow_stage == Stage.IN_REVIEW
