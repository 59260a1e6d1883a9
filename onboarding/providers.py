"""Verification providers: who checks an applicant's identity and documents.

The rest of onboarding talks to a provider only through `VerificationProvider`.
The built-in sandbox provider answers what operators set in admin
(`VerificationStep` rows) and hosts its UBO flow on this service. Providers are
named in the setting `ONBOARDING_VERIFICATION_PROVIDERS` (name -> dotted class);
a program's active one is `ProgramOnboarding.verification_provider`.
"""

from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from bankapi.models import Program
from onboarding.links import sandbox_flow_token
from onboarding.models import Application, ProgramOnboarding, Ubo, VerificationStep

DEFAULT_PROVIDER = "sandbox"


@dataclass(frozen=True)
class StepResult:
    step: str
    status: str
    rejection_type: str | None
    comments: str
    doc_country: str
    doc_type: str


class VerificationProvider(Protocol):
    name: str

    def application_steps(self, application: Application) -> list[StepResult]: ...

    def ubo_steps(self, ubo: Ubo) -> list[StepResult]: ...

    def ubo_reset(self, ubo: Ubo) -> None: ...

    def hosted_flow_url(
        self, request, ubo: Ubo, *, success_url: str, reject_url: str, expires_at: int
    ) -> str: ...


def _result(row: VerificationStep) -> StepResult:
    return StepResult(
        step=row.step,
        status=row.status,
        rejection_type=row.rejection_type or None,
        comments=row.comments,
        doc_country=row.doc_country,
        doc_type=row.doc_type,
    )


class SandboxVerificationProvider:
    """Answers the outcomes operators set in admin; its hosted UBO flow is a page
    of this service where the UBO (or a tester) approves or rejects."""

    def __init__(self, name: str = DEFAULT_PROVIDER) -> None:
        self.name = name

    def application_steps(self, application: Application) -> list[StepResult]:
        return [_result(row) for row in application.verification_steps.filter(ubo__isnull=True)]

    def ubo_steps(self, ubo: Ubo) -> list[StepResult]:
        return [_result(row) for row in ubo.verification_steps.all()]

    def ubo_reset(self, ubo: Ubo) -> None:
        ubo.verification_steps.all().delete()

    def hosted_flow_url(
        self, request, ubo: Ubo, *, success_url: str, reject_url: str, expires_at: int
    ) -> str:
        token = sandbox_flow_token(ubo, success_url=success_url, reject_url=reject_url, expires_at=expires_at)
        return request.build_absolute_uri(f"/v1/sandbox/ubo-verification/{token}")


def provider_named(name: str) -> VerificationProvider:
    return import_string(settings.ONBOARDING_VERIFICATION_PROVIDERS[name])(name)


def active_provider_name(program: Program) -> str:
    row = ProgramOnboarding.objects.filter(program=program).first()
    return row.verification_provider if row else DEFAULT_PROVIDER
