"""The API's names of onboarding's legal documents and acceptances."""

import uuid
from typing import Any

from onboarding.acceptance import LegalAcceptance
from onboarding.models import LegalDocument


def legal_document_location(application_id: uuid.UUID, document_id: uuid.UUID) -> str:
    """The path serving a legal document's content to an application's applicant."""
    return f"/v1/applications/{application_id}/documents/legal/{document_id}/content"


def legal_document_data(application_id: uuid.UUID, document: LegalDocument) -> dict[str, Any]:
    return {
        "id": document.key,
        "version": document.version,
        "hash": document.hash,
        "name": document.name,
        "location": legal_document_location(application_id, document.id),
        "required": document.required,
        "applicableTo": list(document.applicable_to),
        "effectiveDate": document.effective_date.isoformat(),
    }


def acceptance_data(application_id: uuid.UUID, acceptance: LegalAcceptance) -> dict[str, Any]:
    """`{documentSetVersion, acceptedAt, acceptedDocuments}`, each document as the
    legal documents route showed it when it was accepted."""
    return {
        "documentSetVersion": acceptance.document_set_version,
        "acceptedAt": acceptance.accepted_at.isoformat(),
        "acceptedDocuments": [
            {
                "id": document.key,
                "version": document.version,
                "hash": document.hash,
                "name": document.name,
                "location": legal_document_location(application_id, document.document_id),
                "required": document.required,
                "applicableTo": list(document.applicable_to),
                "effectiveDate": document.effective_date.isoformat(),
            }
            for document in acceptance.documents
        ],
    }
