"""An application's legal acceptance is stored in the domain's names, and names
each accepted document by its id rather than by the path serving it.

`Application.legal_documents_acceptance` kept the acceptance exactly as the API
answers it:

    {documentSetVersion, acceptedAt, acceptedDocuments: [
        {id, version, hash, name, location, required, applicableTo, effectiveDate}]}

where `id` is the document's key and `location` the path serving its content,
`/v1/applications/<application id>/documents/legal/<document id>/content`. It
becomes `onboarding.acceptance.LegalAcceptance`'s stored form:

    {document_set_version, accepted_at, documents: [
        {document_id, key, version, hash, name, required, applicable_to, effective_date}]}

Every value is kept as it was. The document's id is read from the end of its
`location`; when a location does not end with one, the document is found by the
application's program and environment, the set's version and the document's
key. An acceptance naming a document found neither way stops the migration
(naming the application) rather than losing the document. Backward rebuilds the
location from the application's id and the document's id.

Both directions rewrite only the rows still in the other form, so running one
again is safe. The forms are written out here rather than imported: this
migration must keep meaning what it meant when the code moves on.
"""

import re
from typing import Any

from django.db import migrations

BATCH = 500
DOCUMENT_ID = re.compile(r"/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})/content\Z")


def location(application_id: Any, document_id: str) -> str:
    return f"/v1/applications/{application_id}/documents/legal/{document_id}/content"


def _document_id(apps: Any, application: Any, set_version: str, document: dict[str, Any]) -> str:
    found = DOCUMENT_ID.search(str(document.get("location", "")))
    if found:
        return found.group(1).lower()
    legal_document = (
        apps.get_model("onboarding", "LegalDocument")
        .objects.filter(
            document_set__program_id=application.program_id,
            document_set__sandbox=application.sandbox,
            document_set__version=set_version,
            key=document["id"],
        )
        .first()
    )
    if legal_document is None:
        raise RuntimeError(
            f"Application {application.id}: its accepted document {document['id']!r} of set "
            f"{set_version!r} is named by no document id and no such document exists."
        )
    return str(legal_document.id)


def acceptance_to_domain(apps: Any, application: Any) -> Any:
    acceptance = application.legal_documents_acceptance
    if not isinstance(acceptance, dict) or "acceptedDocuments" not in acceptance:
        return acceptance
    version = acceptance["documentSetVersion"]
    return {
        "document_set_version": version,
        "accepted_at": acceptance["acceptedAt"],
        "documents": [
            {
                "document_id": _document_id(apps, application, version, document),
                "key": document["id"],
                "version": document["version"],
                "hash": document["hash"],
                "name": document["name"],
                "required": document["required"],
                "applicable_to": document["applicableTo"],
                "effective_date": document["effectiveDate"],
            }
            for document in acceptance["acceptedDocuments"]
        ],
    }


def acceptance_to_api(apps: Any, application: Any) -> Any:
    acceptance = application.legal_documents_acceptance
    if not isinstance(acceptance, dict) or "documents" not in acceptance:
        return acceptance
    return {
        "documentSetVersion": acceptance["document_set_version"],
        "acceptedAt": acceptance["accepted_at"],
        "acceptedDocuments": [
            {
                "id": document["key"],
                "version": document["version"],
                "hash": document["hash"],
                "name": document["name"],
                "location": location(application.id, document["document_id"]),
                "required": document["required"],
                "applicableTo": document["applicable_to"],
                "effectiveDate": document["effective_date"],
            }
            for document in acceptance["documents"]
        ],
    }


def _rewrite(apps: Any, convert: Any) -> None:
    """Rewrite the acceptance of every application `convert` changes, a batch at a time."""
    model = apps.get_model("onboarding", "Application")
    rows = model.objects.filter(legal_documents_acceptance__isnull=False).only(
        "id", "program_id", "sandbox", "legal_documents_acceptance"
    )
    changed = []
    for application in rows.iterator(chunk_size=BATCH):
        converted = convert(apps, application)
        if converted != application.legal_documents_acceptance:
            application.legal_documents_acceptance = converted
            changed.append(application)
        if len(changed) == BATCH:
            model.objects.bulk_update(changed, ["legal_documents_acceptance"])
            changed = []
    if changed:
        model.objects.bulk_update(changed, ["legal_documents_acceptance"])


def forward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, acceptance_to_domain)


def backward(apps: Any, schema_editor: Any) -> None:
    _rewrite(apps, acceptance_to_api)


class Migration(migrations.Migration):
    dependencies = [("onboarding", "0002_application_stage_index")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
