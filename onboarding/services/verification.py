"""Verification status, as the application's provider reports it."""

from dataclasses import dataclass

from django.db import transaction

from bankapi.errors import ApiError
from events.models import EventType
from onboarding.errors import OnboardingErrorCode
from onboarding.events import application_event
from onboarding.models import Application, Ubo
from onboarding.providers import StepResult, active_provider_name, provider_named
from onboarding.services.applications import application_stage_move


@dataclass(frozen=True)
class UboVerification:
    ubo_id: str
    status: str
    steps: list[StepResult]


@dataclass(frozen=True)
class VerificationStatus:
    steps: list[StepResult]
    ubos: list[UboVerification] | None


def verification_status(*, application: Application, include_ubos: bool) -> VerificationStatus:
    """The provider's steps for the application (and its UBOs when asked).

    The application keeps the provider that was active when it was made; once
    operators switch the program to another one, its status cannot be answered.
    """
    if application.verification_provider != active_provider_name(application.program):
        raise ApiError(
            OnboardingErrorCode.WEB_TOKEN_PROVIDER_MISMATCH,
            "The application's verification provider is not the program's active provider.",
        )
    provider = provider_named(application.verification_provider)
    steps = provider.application_steps(application)
    if not include_ubos:
        return VerificationStatus(steps=steps, ubos=None)
    ubos: list[Ubo] = list(application.ubos.all()) if application.is_company else []
    return VerificationStatus(
        steps=steps,
        ubos=[UboVerification(str(ubo.id), ubo.status, provider.ubo_steps(ubo)) for ubo in ubos],
    )


def verification_outcomes_recorded(*, application: Application) -> None:
    """The provider reported outcomes: integrators hear of it, and a SUBMITTED
    application is now IN_REVIEW."""
    with transaction.atomic():
        application.refresh_from_db()
        application_event(application, EventType.APPLICATION_VERIFICATION_UPDATED)
        if application.workflow_stage == Application.Stage.SUBMITTED:
            application_stage_move(application=application, to_stage=Application.Stage.IN_REVIEW)
