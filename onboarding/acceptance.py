"""An applicant's acceptance of legal documents, in the domain's own names.

`Application.legal_documents_acceptance` keeps it in its stored form
(`to_stored`): the set's version, when it was accepted, and a copy of each
accepted document as it was then (its id, key, version, hash, name, whether it
was required, the account types it applied to, the day it took effect), so a
later edit of a set never rewrites what was accepted. The API's names, and the
path each document is served at, are the presenters' business
(`onboarding.presenters`): neither is stored.
"""

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any


@dataclass(frozen=True)
class AcceptedLegalDocument:
    document_id: uuid.UUID
    key: str
    version: str
    hash: str
    name: str
    required: bool
    applicable_to: tuple[str, ...]
    effective_date: date

    def to_stored(self) -> dict[str, Any]:
        return {
            "document_id": str(self.document_id),
            "key": self.key,
            "version": self.version,
            "hash": self.hash,
            "name": self.name,
            "required": self.required,
            "applicable_to": list(self.applicable_to),
            "effective_date": self.effective_date.isoformat(),
        }

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "AcceptedLegalDocument":
        return cls(
            document_id=uuid.UUID(data["document_id"]),
            key=data["key"],
            version=data["version"],
            hash=data["hash"],
            name=data["name"],
            required=data["required"],
            applicable_to=tuple(data["applicable_to"]),
            effective_date=date.fromisoformat(data["effective_date"]),
        )


@dataclass(frozen=True)
class LegalAcceptance:
    document_set_version: str
    accepted_at: datetime
    documents: tuple[AcceptedLegalDocument, ...]

    def to_stored(self) -> dict[str, Any]:
        return {
            "document_set_version": self.document_set_version,
            "accepted_at": self.accepted_at.isoformat(),
            "documents": [document.to_stored() for document in self.documents],
        }

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "LegalAcceptance":
        return cls(
            document_set_version=data["document_set_version"],
            accepted_at=datetime.fromisoformat(data["accepted_at"]),
            documents=tuple(AcceptedLegalDocument.from_stored(document) for document in data["documents"]),
        )
