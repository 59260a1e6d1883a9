"""Reads of onboarding rows, always within the caller's scope."""

import uuid

from django.db.models import QuerySet

from bankapi.scope import Scope, customers_of, get_or_not_found
from onboarding.models import Application, LegalDocument, LegalDocumentSet


def applications_of(scope: Scope) -> QuerySet[Application]:
    """Applications of the customers the caller acts for, in its program and environment."""
    return Application.objects.for_scope(scope).filter(customer__in=customers_of(scope))


def application_of(scope: Scope, application_id: str) -> Application:
    return get_or_not_found(
        applications_of(scope).select_related("program", "customer"), application_id, "Application"
    )


def legal_set_current(*, program_id: uuid.UUID | str, sandbox: bool) -> LegalDocumentSet | None:
    return LegalDocumentSet.objects.filter(program_id=program_id, sandbox=sandbox, is_current=True).first()


def legal_documents_for(document_set: LegalDocumentSet, account_type: str) -> list[LegalDocument]:
    """The set's documents that apply to the program's account type, in key order."""
    return [doc for doc in document_set.documents.order_by("key") if account_type in doc.applicable_to]


def legal_document_of(application: Application, document_id: str) -> LegalDocument:
    """A document of any set of the application's program and environment (current
    or not: an acceptance keeps pointing at what was accepted)."""
    rows = LegalDocument.objects.filter(
        document_set__program_id=application.program_id, document_set__sandbox=application.sandbox
    )
    return get_or_not_found(rows, document_id, "Legal document")
