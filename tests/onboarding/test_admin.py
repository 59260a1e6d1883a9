"""Operators configure legal documents, verification outcomes and stages in admin."""

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from onboarding.models import Application, LegalDocument, LegalDocumentSet, VerificationStep
from tests.support.factories_backoffice import operator_user


@pytest.fixture
def operator(client):
    """The test client signed in to admin as an operator."""
    client.force_login(operator_user())
    return client


def _inline_management(prefix: str, total: int = 0, initial: int = 0) -> dict:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def test_a_legal_document_uploaded_in_admin_is_hashed_from_its_content(operator, program):
    content = b"%PDF-1.4 sandbox terms, version 2"
    form = {
        "program": str(program.id),
        "sandbox": "on",
        "version": "2026-06",
        "provider": "sandbox",
        "last_updated": "2026-06-01",
        **_inline_management("documents", total=1),
        "documents-0-key": "terms",
        "documents-0-version": "2.0",
        "documents-0-name": "Terms and Conditions",
        "documents-0-required": "on",
        "documents-0-applicable_to": '["consumer"]',
        "documents-0-effective_date": "2026-06-01",
        "documents-0-upload": SimpleUploadedFile("terms.pdf", content, content_type="application/pdf"),
    }

    response = operator.post("/admin/onboarding/legaldocumentset/add/", form)

    assert response.status_code == 302, response.content[:2000]
    document = LegalDocument.objects.get(document_set__version="2026-06")
    assert bytes(document.content) == content
    assert document.content_type == "application/pdf"
    assert document.hash == "sha256:" + hashlib.sha256(content).hexdigest()


def test_a_legal_document_needs_its_content(operator, program):
    form = {
        "program": str(program.id),
        "sandbox": "on",
        "version": "2026-07",
        "provider": "sandbox",
        "last_updated": "2026-07-01",
        **_inline_management("documents", total=1),
        "documents-0-key": "terms",
        "documents-0-version": "3.0",
        "documents-0-name": "Terms",
        "documents-0-applicable_to": '["consumer"]',
        "documents-0-effective_date": "2026-07-01",
    }

    response = operator.post("/admin/onboarding/legaldocumentset/add/", form)

    assert response.status_code == 200
    assert not LegalDocumentSet.objects.filter(version="2026-07").exists()


def test_stage_actions_move_applications_through_the_service(operator, applicant2):
    application_id = applicant2.application_id

    allowed = operator.post(
        "/admin/onboarding/application/",
        {"action": "move_to_in_progress", "_selected_action": [application_id]},
    )
    refused = operator.post(
        "/admin/onboarding/application/",
        {"action": "move_to_approved", "_selected_action": [application_id]},
    )

    assert allowed.status_code == 302 and refused.status_code == 302
    assert Application.objects.get(id=application_id).workflow_stage == "IN_PROGRESS"


def test_verification_outcomes_set_in_admin_are_what_the_provider_reports(operator, applicant2):
    application = applicant2.application
    page = operator.get(f"/admin/onboarding/application/{application.id}/change/")
    assert page.status_code == 200
    form = {
        "applicant_first_name": "",
        "applicant_last_name": "",
        "applicant_email": application.applicant_email,
        **_inline_management("ubos"),
        **_inline_management("verification_steps", total=1),
        "verification_steps-0-step": "IDENTITY",
        "verification_steps-0-status": "FAILED",
        "verification_steps-0-rejection_type": "FINAL",
        "verification_steps-0-comments": "Document expired",
        "verification_steps-0-doc_country": "FR",
        "verification_steps-0-doc_type": "NATIONAL_ID",
        "verification_steps-0-position": "0",
    }

    response = operator.post(f"/admin/onboarding/application/{application.id}/change/", form)

    assert response.status_code == 302, response.content[:3000]
    step = VerificationStep.objects.get(application=application)
    assert (step.status, step.rejection_type, step.doc_country) == ("FAILED", "FINAL", "FR")
