"""Legal documents: the program's current set, the document content, acceptance."""

import hashlib

import pytest

from onboarding.models import Application, LegalDocument, LegalDocumentSet
from onboarding.presenters import acceptance_data

# Both programs (the payer's and the business one) have a current set.
pytestmark = pytest.mark.usefixtures("legal_sets")


def legal_url(application_id: str) -> str:
    return f"/v1/applications/{application_id}/documents/legal"


def accept_url(application_id: str) -> str:
    return f"/v1/applications/{application_id}/documents/legal/accept"


def current(api, application_id, token) -> dict:
    return api.get(legal_url(application_id), **token).json()["data"]


def acceptance_of(documents: dict, keys=None) -> dict:
    return {
        "documentSetVersion": documents["documentSetVersion"],
        "acceptedDocuments": [
            {"id": doc["id"], "hash": doc["hash"], "version": doc["version"]}
            for doc in documents["docs"]
            if keys is None or doc["id"] in keys
        ],
    }


def test_consumer_set_lists_terms_privacy_and_marketing(api, applicant, customer_id_token):
    response = api.get(legal_url(applicant.application_id), **customer_id_token)

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["accountType"] == "consumer"
    assert data["currentAcceptance"] is None
    assert "message" not in data
    documents = data["documents"]
    assert documents["provider"] == "sandbox"
    assert documents["documentSetVersion"]
    assert {doc["id"]: doc["required"] for doc in documents["docs"]} == {
        "terms": True,
        "privacy": True,
        "marketing": False,
    }
    for doc in documents["docs"]:
        assert set(doc) == {
            "id",
            "version",
            "hash",
            "name",
            "location",
            "required",
            "applicableTo",
            "effectiveDate",
        }
        assert doc["hash"].startswith("sha256:") and len(doc["hash"]) == 71
        assert "consumer" in doc["applicableTo"]


def test_business_set_adds_business_terms(api, business_applicant, business_id_token):
    data = current(api, business_applicant.application_id, business_id_token)

    assert data["accountType"] == "business"
    docs = {doc["id"]: doc for doc in data["documents"]["docs"]}
    assert set(docs) == {"terms", "privacy", "marketing", "business-terms"}
    assert docs["business-terms"]["required"] is True
    assert docs["business-terms"]["applicableTo"] == ["business"]


def test_alias_route_answers_the_same(api, applicant, customer_id_token):
    application_id = applicant.application_id

    alias = api.get(f"/v1/applications/{application_id}/agreements/legal/docs", **customer_id_token)

    assert alias.status_code == 200
    assert alias.json() == api.get(legal_url(application_id), **customer_id_token).json()


@pytest.mark.parametrize("suffix", ["documents/legal", "agreements/legal/docs"])
def test_document_key_is_unsupported(api, applicant, customer_id_token, suffix):
    application_id = applicant.application_id

    response = api.get(f"/v1/applications/{application_id}/{suffix}?documentKey=terms", **customer_id_token)

    assert response.status_code == 422
    assert response.json()["code"] == "UNSUPPORTED_PARAMETER"


def test_a_program_without_a_set_answers_a_message(api, program, applicant, customer_id_token):
    LegalDocumentSet.objects.filter(program=program).update(is_current=False)

    data = current(api, applicant.application_id, customer_id_token)

    assert data["documents"] is None
    assert data["message"]
    assert data["accountType"] == "consumer"


def test_location_serves_the_document_whose_sha256_is_the_hash(api, applicant, customer_id_token):
    docs = current(api, applicant.application_id, customer_id_token)["documents"]["docs"]

    for doc in docs:
        response = api.get(doc["location"], **customer_id_token)
        assert response.status_code == 200
        assert "sha256:" + hashlib.sha256(response.content).hexdigest() == doc["hash"]


def test_location_refuses_the_access_token_and_outsiders(
    api, applicant, business, customer_id_token, customer_access_token, customer2_id_token, business_id_token
):
    application_id = applicant.application_id
    location = current(api, application_id, customer_id_token)["documents"]["docs"][0]["location"]
    business_document = LegalDocument.objects.get(
        document_set__program_id=business.program_id, key="business-terms"
    )

    assert api.get(location, **customer_access_token).status_code == 401
    for outsider in (customer2_id_token, business_id_token):
        other = api.get(location, **outsider)
        assert other.status_code == 404
        assert other.json()["code"] == "RESOURCE_NOT_FOUND"
    foreign = f"/v1/applications/{application_id}/documents/legal/{business_document.id}/content"
    assert api.get(foreign, **customer_id_token).status_code == 404
    unknown = f"/v1/applications/{application_id}/documents/legal/not-an-id/content"
    assert api.get(unknown, **customer_id_token).status_code == 404


def test_legal_routes_refuse_outsiders_and_the_access_token(
    api, applicant, customer2_id_token, business_id_token, customer_access_token
):
    application_id = applicant.application_id

    assert api.get(legal_url(application_id), **customer2_id_token).status_code == 404
    assert api.get(legal_url(application_id), **business_id_token).status_code == 404
    assert api.get(legal_url(application_id), **customer_access_token).status_code == 401
    assert api.get(legal_url("nope"), **customer2_id_token).status_code == 404


def test_accepting_the_required_documents_stores_the_acceptance(api, applicant, customer_id_token):
    application_id = applicant.application_id
    documents = current(api, application_id, customer_id_token)["documents"]

    response = api.post(
        accept_url(application_id),
        acceptance_of(documents, {"terms", "privacy"}),
        format="json",
        **customer_id_token,
    )

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert body["data"]["success"] is True
    assert body["data"]["message"]
    acceptance = body["data"]["acceptance"]
    assert acceptance["documentSetVersion"] == documents["documentSetVersion"]
    assert sorted(doc["id"] for doc in acceptance["acceptedDocuments"]) == ["privacy", "terms"]
    by_id = {doc["id"]: doc for doc in documents["docs"]}
    for doc in acceptance["acceptedDocuments"]:
        assert doc == by_id[doc["id"]]
    stored = Application.objects.get(id=application_id)
    assert acceptance_data(stored.id, stored.legal_acceptance()) == acceptance
    assert stored.workflow_stage == "IN_PROGRESS"
    assert current(api, application_id, customer_id_token)["currentAcceptance"] == acceptance
    read = api.get(f"/v1/applications/{application_id}", **customer_id_token).json()["data"]["application"]
    assert read["legalDocumentsAcceptance"] == acceptance
    assert read["workflowStage"] == "IN_PROGRESS"


def test_business_must_accept_business_terms_too(api, business_applicant, business_id_token):
    application_id = business_applicant.application_id
    documents = current(api, application_id, business_id_token)["documents"]

    without = api.post(
        accept_url(application_id),
        acceptance_of(documents, {"terms", "privacy"}),
        format="json",
        **business_id_token,
    )
    with_it = api.post(
        accept_url(application_id),
        acceptance_of(documents, {"terms", "privacy", "business-terms", "marketing"}),
        format="json",
        **business_id_token,
    )

    assert without.status_code == 400
    assert "business-terms" in without.json()["message"]
    assert with_it.status_code == 200
    assert len(with_it.json()["data"]["acceptance"]["acceptedDocuments"]) == 4


def _wrong_bodies(documents: dict) -> dict[str, dict]:
    good = acceptance_of(documents)
    terms = next(entry for entry in good["acceptedDocuments"] if entry["id"] == "terms")
    others = [entry for entry in good["acceptedDocuments"] if entry["id"] != "terms"]
    return {
        "old set version": {**good, "documentSetVersion": "1999-01"},
        "empty set version": {**good, "documentSetVersion": ""},
        "no set version": {"acceptedDocuments": good["acceptedDocuments"]},
        "unknown id": {**good, "acceptedDocuments": [*good["acceptedDocuments"], {**terms, "id": "cookies"}]},
        "hash mismatch": {**good, "acceptedDocuments": [*others, {**terms, "hash": "sha256:" + "0" * 64}]},
        "hash of another document": {
            **good,
            "acceptedDocuments": [*others, {**terms, "hash": others[0]["hash"]}],
        },
        "version mismatch": {**good, "acceptedDocuments": [*others, {**terms, "version": "0.9"}]},
        "required document missing": {**good, "acceptedDocuments": others},
        "empty list": {**good, "acceptedDocuments": []},
        "no list": {"documentSetVersion": good["documentSetVersion"]},
        "list of strings": {**good, "acceptedDocuments": ["terms"]},
        "document listed twice": {**good, "acceptedDocuments": [*good["acceptedDocuments"], terms]},
        "entry missing its hash": {
            **good,
            "acceptedDocuments": [*others, {"id": "terms", "version": terms["version"]}],
        },
        "wrong type": {**good, "acceptedDocuments": [*others, {**terms, "version": 1}]},
        "not a list": {**good, "acceptedDocuments": {"id": "terms"}},
    }


@pytest.mark.parametrize(
    "case",
    [
        "old set version",
        "empty set version",
        "no set version",
        "unknown id",
        "hash mismatch",
        "hash of another document",
        "version mismatch",
        "required document missing",
        "empty list",
        "no list",
        "list of strings",
        "document listed twice",
        "entry missing its hash",
        "wrong type",
        "not a list",
    ],
)
def test_every_wrong_acceptance_is_refused_and_nothing_is_stored(api, applicant, customer_id_token, case):
    application_id = applicant.application_id
    documents = current(api, application_id, customer_id_token)["documents"]
    before = Application.objects.get(id=application_id)

    response = api.post(
        accept_url(application_id), _wrong_bodies(documents)[case], format="json", **customer_id_token
    )

    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert response.json()["errors"]
    after = Application.objects.get(id=application_id)
    assert after.legal_documents_acceptance is None
    assert (after.workflow_stage, after.updated_at) == (before.workflow_stage, before.updated_at)


def test_a_document_of_the_other_account_type_cannot_be_accepted(api, applicant, business, customer_id_token):
    """business-terms exists only in the business program's set: unknown to a consumer."""
    application_id = applicant.application_id
    documents = current(api, application_id, customer_id_token)["documents"]
    business_terms = LegalDocument.objects.get(
        document_set__program_id=business.program_id, key="business-terms"
    )
    body = acceptance_of(documents)
    body["acceptedDocuments"].append(
        {"id": "business-terms", "hash": business_terms.hash, "version": business_terms.version}
    )

    response = api.post(accept_url(application_id), body, format="json", **customer_id_token)

    assert response.status_code == 400
    assert Application.objects.get(id=application_id).legal_documents_acceptance is None


def test_a_document_not_applicable_to_the_account_type_is_not_served_nor_accepted(
    api, program, applicant, customer_id_token
):
    document_set = LegalDocumentSet.objects.get(program=program, is_current=True)
    business_only = LegalDocument.objects.create(
        document_set=document_set,
        key="business-annex",
        version="1.0",
        name="Business annex",
        required=True,
        applicable_to=["business"],
        effective_date="2026-01-01",
        content=b"annex",
    )
    application_id = applicant.application_id
    documents = current(api, application_id, customer_id_token)["documents"]
    body = acceptance_of(documents)
    body["acceptedDocuments"].append({"id": "business-annex", "hash": business_only.hash, "version": "1.0"})

    refused = api.post(accept_url(application_id), body, format="json", **customer_id_token)
    accepted = api.post(
        accept_url(application_id), acceptance_of(documents), format="json", **customer_id_token
    )

    assert "business-annex" not in {doc["id"] for doc in documents["docs"]}
    assert refused.status_code == 400
    assert accepted.status_code == 200


def test_acceptance_without_a_configured_set_is_refused(api, program, applicant, customer_id_token):
    application_id = applicant.application_id
    documents = current(api, application_id, customer_id_token)["documents"]
    LegalDocumentSet.objects.filter(program=program).update(is_current=False)

    response = api.post(
        accept_url(application_id), acceptance_of(documents), format="json", **customer_id_token
    )

    assert response.status_code == 400
    assert Application.objects.get(id=application_id).legal_documents_acceptance is None


def test_accept_refuses_outsiders_and_the_access_token(
    api, applicant, customer_id_token, customer2_id_token, customer_access_token
):
    application_id = applicant.application_id
    body = acceptance_of(current(api, application_id, customer_id_token)["documents"])

    outsider = api.post(accept_url(application_id), body, format="json", **customer2_id_token)
    access = api.post(accept_url(application_id), body, format="json", **customer_access_token)

    assert outsider.status_code == 404
    assert outsider.json()["code"] == "RESOURCE_NOT_FOUND"
    assert access.status_code == 401
    assert Application.objects.get(id=application_id).legal_documents_acceptance is None


def test_an_unknown_application_is_not_found_whatever_the_body(api, customer_id_token):
    response = api.post(accept_url("nope"), {"junk": True}, format="json", **customer_id_token)

    assert response.status_code == 404


def test_stored_hash_follows_the_content(program):
    document = LegalDocument.objects.get(
        document_set__program=program, document_set__is_current=True, key="terms"
    )

    document.content = b"new text"
    document.save()

    assert document.hash == "sha256:" + hashlib.sha256(b"new text").hexdigest()
