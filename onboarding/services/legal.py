"""Legal documents: the program's current set and the applicant's acceptance.

An acceptance is checked whole before anything is stored: the set version must be
the current one, every entry must name a document of the set that applies to the
program's account type with its current hash and version, no document may be
named twice, and every required document must be there. Any failure is a 400 and
the application is left as it was.
"""

from dataclasses import dataclass

from django.db import transaction

from bankapi.clock import customer_now
from bankapi.errors import ApiError, ErrorCode
from onboarding.acceptance import AcceptedLegalDocument, LegalAcceptance
from onboarding.models import Application, LegalDocument, LegalDocumentSet
from onboarding.selectors import legal_documents_for, legal_set_current
from onboarding.services.applications import application_stage_move

NO_SET_MESSAGE = "No legal documents are configured for this program."
ACCEPTED_MESSAGE = "Legal documents accepted."


@dataclass(frozen=True)
class AcceptedDocument:
    """A document as the applicant names it in an acceptance: its key, hash and version."""

    id: str
    hash: str
    version: str


@dataclass(frozen=True)
class LegalView:
    document_set: LegalDocumentSet | None
    documents: list[LegalDocument]
    account_type: str


def legal_view(application: Application) -> LegalView:
    account_type = application.program.account_type
    document_set = legal_set_current(program_id=application.program_id, sandbox=application.sandbox)
    documents = legal_documents_for(document_set, account_type) if document_set else []
    return LegalView(document_set=document_set, documents=documents, account_type=account_type)


def _refuse(field: str, message: str) -> ApiError:
    return ApiError(ErrorCode.VALIDATION_ERROR, message, errors=[{"field": field, "message": message}])


def _check(
    view: LegalView, document_set_version: str, accepted: list[AcceptedDocument]
) -> list[LegalDocument]:
    if view.document_set is None:
        raise _refuse("documentSetVersion", NO_SET_MESSAGE)
    if document_set_version != view.document_set.version:
        raise _refuse(
            "documentSetVersion",
            f"documentSetVersion must be the current set's version, {view.document_set.version}.",
        )
    if not accepted:
        raise _refuse("acceptedDocuments", "At least one document must be accepted.")
    by_key = {document.key: document for document in view.documents}
    chosen: list[LegalDocument] = []
    for index, entry in enumerate(accepted):
        field = f"acceptedDocuments.{index}"
        document = by_key.get(entry.id)
        if document is None:
            raise _refuse(f"{field}.id", f"{entry.id!r} is not a document of this set for this account type.")
        if document in chosen:
            raise _refuse(f"{field}.id", f"{entry.id!r} is listed twice.")
        if entry.hash != document.hash:
            raise _refuse(f"{field}.hash", f"The hash of {entry.id!r} is not the current document's hash.")
        if entry.version != document.version:
            raise _refuse(f"{field}.version", f"The version of {entry.id!r} is not the current version.")
        chosen.append(document)
    missing = [document.key for document in view.documents if document.required and document not in chosen]
    if missing:
        raise _refuse("acceptedDocuments", f"Required documents missing: {', '.join(missing)}.")
    return chosen


def _accepted(document: LegalDocument) -> AcceptedLegalDocument:
    return AcceptedLegalDocument(
        document_id=document.id,
        key=document.key,
        version=document.version,
        hash=document.hash,
        name=document.name,
        required=document.required,
        applicable_to=tuple(document.applicable_to),
        effective_date=document.effective_date,
    )


def legal_accept(
    *, application: Application, document_set_version: str, accepted: list[AcceptedDocument]
) -> LegalAcceptance:
    """Store the acceptance on the application and return it; NEW moves to IN_PROGRESS."""
    view = legal_view(application)
    chosen = _check(view, document_set_version, accepted)
    assert view.document_set is not None
    acceptance = LegalAcceptance(
        document_set_version=view.document_set.version,
        accepted_at=customer_now(application.customer_id),
        documents=tuple(_accepted(document) for document in chosen),
    )
    with transaction.atomic():
        Application.objects.filter(pk=application.pk).update(
            legal_documents_acceptance=acceptance.to_stored(), updated_at=acceptance.accepted_at
        )
        application.refresh_from_db()
        if application.workflow_stage == Application.Stage.NEW:
            application_stage_move(application=application, to_stage=Application.Stage.IN_PROGRESS)
    return acceptance
