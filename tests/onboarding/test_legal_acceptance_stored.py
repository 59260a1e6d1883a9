"""An application's legal acceptance is stored in the domain's names, naming each
document by its id; the routes answer exactly what they answered when it was
stored as the API showed it."""

import importlib
import json
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from onboarding.acceptance import LegalAcceptance
from onboarding.models import Application, LegalDocument
from tests.onboarding.test_legal import accept_url, acceptance_of, current, legal_url

pytestmark = pytest.mark.usefixtures("legal_sets")

MIGRATION = "0003_legal_acceptance_in_domain_names"
BEFORE = "0002_application_stage_index"


def _accept(api, application_id, token) -> dict:
    documents = current(api, application_id, token)["documents"]
    response = api.post(
        accept_url(application_id), acceptance_of(documents, {"terms", "privacy"}), format="json", **token
    )
    assert response.status_code == 200, response.json()
    return response.json()["data"]["acceptance"]


def test_an_acceptance_is_stored_in_domain_names_with_each_document_id(api, applicant, customer_id_token):
    application_id = applicant.application_id
    answered = _accept(api, application_id, customer_id_token)

    stored = Application.objects.get(id=application_id).legal_documents_acceptance
    terms = LegalDocument.objects.get(
        document_set__version=answered["documentSetVersion"],
        document_set__program__customers__id=applicant.customer_id,
        key="terms",
    )
    assert set(stored) == {"document_set_version", "accepted_at", "documents"}
    assert stored["document_set_version"] == answered["documentSetVersion"]
    assert stored["accepted_at"] == answered["acceptedAt"]
    by_key = {document["key"]: document for document in stored["documents"]}
    assert by_key["terms"] == {
        "document_id": str(terms.id),
        "key": "terms",
        "version": terms.version,
        "hash": terms.hash,
        "name": terms.name,
        "required": True,
        "applicable_to": list(terms.applicable_to),
        "effective_date": terms.effective_date.isoformat(),
    }
    assert LegalAcceptance.from_stored(stored).to_stored() == stored
    # The path serving the document is made from the ids, never stored.
    shown = {document["id"]: document for document in answered["acceptedDocuments"]}
    assert (
        shown["terms"]["location"] == f"/v1/applications/{application_id}/documents/legal/{terms.id}/content"
    )


def _migrate(name: str | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("onboarding", name)] if name else executor.loader.graph.leaf_nodes())


@pytest.fixture
def migrations_restored(transactional_db):
    """The database is migrated back to the latest, whatever the test does."""
    yield
    _migrate()


def _answers(api, application_id, token) -> tuple[bytes, bytes]:
    application = api.get(f"/v1/applications/{application_id}", **token)
    legal = api.get(legal_url(application_id), **token)
    assert application.status_code == legal.status_code == 200
    return application.content, legal.content


def test_the_migration_moves_acceptances_both_ways_and_answers_stay_byte_identical(
    api, applicant, customer_id_token, migrations_restored
):
    application_id = applicant.application_id
    answered = _accept(api, application_id, customer_id_token)
    shown = _answers(api, application_id, customer_id_token)
    stored = Application.objects.get(id=application_id).legal_documents_acceptance

    _migrate(BEFORE)

    # Back to the acceptance exactly as the API answered it.
    assert Application.objects.get(id=application_id).legal_documents_acceptance == answered
    assert json.loads(shown[1])["data"]["currentAcceptance"] == answered

    _migrate(MIGRATION)

    assert Application.objects.get(id=application_id).legal_documents_acceptance == stored
    assert _answers(api, application_id, customer_id_token) == shown


def test_a_document_named_by_no_id_is_found_by_its_set_and_key(
    api, applicant, customer_id_token, migrations_restored
):
    application_id = applicant.application_id
    answered = _accept(api, application_id, customer_id_token)
    stored = Application.objects.get(id=application_id).legal_documents_acceptance
    _migrate(BEFORE)
    odd = {
        **answered,
        "acceptedDocuments": [
            {**document, "location": "elsewhere"} for document in answered["acceptedDocuments"]
        ],
    }
    Application.objects.filter(id=application_id).update(legal_documents_acceptance=odd)

    _migrate(MIGRATION)

    assert Application.objects.get(id=application_id).legal_documents_acceptance == stored


def test_a_document_found_neither_way_stops_the_migration(
    api, applicant, customer_id_token, migrations_restored
):
    application_id = applicant.application_id
    answered = _accept(api, application_id, customer_id_token)
    _migrate(BEFORE)
    unknown = {**answered["acceptedDocuments"][0], "id": "gone", "location": ""}
    Application.objects.filter(id=application_id).update(
        legal_documents_acceptance={**answered, "acceptedDocuments": [unknown]}
    )

    with pytest.raises(RuntimeError, match=f"Application {application_id}: .*'gone'"):
        _migrate(MIGRATION)

    Application.objects.filter(id=application_id).update(legal_documents_acceptance=None)


def test_each_direction_can_run_again():
    migration = importlib.import_module(f"onboarding.migrations.{MIGRATION}")
    application_id, document_id = uuid.uuid4(), uuid.uuid4()

    class Row:
        id, program_id, sandbox = application_id, None, True
        legal_documents_acceptance: dict | None = None

    api_form = {
        "documentSetVersion": "2",
        "acceptedAt": "2026-11-25T10:00:00.123456+00:00",
        "acceptedDocuments": [
            {
                "id": "terms",
                "version": "1.1",
                "hash": "sha256:" + "0" * 64,
                "name": "Terms",
                "location": f"/v1/applications/{application_id}/documents/legal/{document_id}/content",
                "required": True,
                "applicableTo": ["consumer"],
                "effectiveDate": "2026-01-01",
            }
        ],
    }
    row = Row()
    row.legal_documents_acceptance = api_form
    domain = migration.acceptance_to_domain(None, row)
    row.legal_documents_acceptance = domain

    assert domain["documents"][0]["document_id"] == str(document_id)
    assert migration.acceptance_to_domain(None, row) == domain
    assert LegalAcceptance.from_stored(domain).to_stored() == domain
    back = migration.acceptance_to_api(None, row)
    assert back == api_form
    row.legal_documents_acceptance = back
    assert migration.acceptance_to_api(None, row) == api_form
