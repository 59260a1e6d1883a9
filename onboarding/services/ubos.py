"""UBO actions: e-mail a UBO a signed link to the provider's hosted verification
flow, or reset their verification; and what the hosted flow reports back."""

import uuid
from dataclasses import dataclass

from django.db import transaction

from bankapi.errors import ApiError, ErrorCode, validation_error
from bankapi.scope import parse_uuid
from bankapi.tasks import task_publish_after_commit
from onboarding.links import UboLink, now_seconds
from onboarding.models import Application, Ubo, VerificationStep
from onboarding.providers import provider_named
from onboarding.services.ubo_emails import ubo_link
from onboarding.services.verification import verification_outcomes_recorded
from onboarding.tasks import send_ubo_verification_email

VERIFICATION_EMAIL = "UBO_VERIFICATION_EMAIL"
RESET = "UBO_RESET"


@dataclass(frozen=True)
class UboActionResult:
    ubo_id: uuid.UUID
    link: str | None = None
    status: str | None = None


def _ubos_named(application: Application, ubo_ids: list[str]) -> list[Ubo]:
    """The named UBOs of this application, locked, in the order named.

    Any id that is not a UBO of this application is a 404 and nothing is done.
    """
    if len(set(ubo_ids)) != len(ubo_ids):
        raise validation_error("uboIds", "A UBO may be named only once.")
    parsed = [parse_uuid(raw) for raw in ubo_ids]
    wanted = [value for value in parsed if value is not None]
    rows = {
        ubo.id: ubo for ubo in Ubo.objects.select_for_update().filter(application=application, id__in=wanted)
    }
    if len(wanted) != len(parsed) or any(value not in rows for value in wanted):
        raise ApiError(ErrorCode.RESOURCE_NOT_FOUND, "UBO not found on this application")
    return [rows[value] for value in wanted]


def ubo_verification_links_send(
    *,
    application: Application,
    ubo_ids: list[str],
    success_url: str,
    reject_url: str,
    ttl_seconds: int,
    link_base: str,
) -> list[UboActionResult]:
    """Move each UBO to LINK_SENT and e-mail it a signed link valid `ttl_seconds`.

    The e-mails leave after commit, through a task that retries delivery; a
    failed delivery never undoes the action.
    """
    expires_at = now_seconds() + ttl_seconds
    pending = {
        "successUrl": success_url,
        "rejectUrl": reject_url,
        "expiresAt": expires_at,
        "linkBase": link_base,
        # When the e-mail's task should run (at once, after commit): the sweep
        # sends it again once it is this late by more than its grace.
        "dueAt": now_seconds(),
    }
    results = []
    with transaction.atomic():
        for ubo in _ubos_named(application, ubo_ids):
            ubo.status = Ubo.Status.LINK_SENT
            ubo.email_pending = pending
            ubo.save(update_fields=["status", "email_pending", "updated_at"])
            link = ubo_link(ubo, pending)
            task_publish_after_commit(send_ubo_verification_email, str(ubo.id), link, expires_at)
            results.append(UboActionResult(ubo_id=ubo.id, link=link))
    return results


def ubo_verification_reset(*, application: Application, ubo_ids: list[str]) -> list[UboActionResult]:
    """Back to PENDING, the provider's results cleared; links sent before stop working."""
    provider = provider_named(application.verification_provider)
    results = []
    with transaction.atomic():
        for ubo in _ubos_named(application, ubo_ids):
            ubo.status = Ubo.Status.PENDING
            ubo.link_generation += 1
            ubo.email_pending = None
            ubo.save(update_fields=["status", "link_generation", "email_pending", "updated_at"])
            provider.ubo_reset(ubo)
            results.append(UboActionResult(ubo_id=ubo.id, status=ubo.status))
    return results


def ubo_link_resolve(link: UboLink) -> Ubo | None:
    """The UBO a valid link names, or None when it no longer does (reset since)."""
    ubo_id = parse_uuid(link.ubo_id)
    ubo = Ubo.objects.select_related("application").filter(id=ubo_id).first() if ubo_id else None
    if ubo is None or ubo.link_generation != link.generation:
        return None
    return ubo


def ubo_verification_started(*, ubo: Ubo) -> None:
    """The UBO opened the hosted flow."""
    Ubo.objects.filter(id=ubo.id, status=Ubo.Status.LINK_SENT).update(status=Ubo.Status.IN_PROGRESS)


def ubo_verification_finished(*, ubo: Ubo, verified: bool) -> Ubo:
    """The sandbox provider's outcome for the UBO: VERIFIED, or REJECTED (a final
    identity failure)."""
    with transaction.atomic():
        locked = Ubo.objects.select_for_update().get(id=ubo.id)
        locked.status = Ubo.Status.VERIFIED if verified else Ubo.Status.REJECTED
        locked.save(update_fields=["status", "updated_at"])
        VerificationStep.objects.update_or_create(
            application_id=locked.application_id,
            ubo=locked,
            step=VerificationStep.Step.IDENTITY,
            defaults={
                "status": VerificationStep.Status.COMPLETED if verified else VerificationStep.Status.FAILED,
                "rejection_type": "" if verified else VerificationStep.RejectionType.FINAL,
                "comments": "" if verified else "Rejected in the sandbox verification flow.",
                "doc_country": "GB",
                "doc_type": "PASSPORT",
            },
        )
        # A provider outcome like any other: integrators hear of it, and a
        # SUBMITTED application moves into review.
        verification_outcomes_recorded(application=locked.application)
    return locked
