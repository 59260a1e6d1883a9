"""Operators configure legal documents, verification outcomes and stages in admin."""

import hashlib

from django.core.files.uploadedfile import SimpleUploadedFile

from authn.models import User
from onboarding.models import Application, LegalDocument, LegalDocumentSet, VerificationStep


def operator(client, sandbox):
    client.force_login(User.objects.get(email=sandbox["operator"]["email"], program=None))
    return client


def _inline_management(prefix: str, total: int = 0, initial: int = 0) -> dict:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def test_a_legal_document_uploaded_in_admin_is_hashed_from_its_content(client, sandbox):
    operator(client, sandbox)
    content = b"%PDF-1.4 sandbox terms, version 2"
    form = {
        "program": sandbox["consumerProgramId"],
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

    response = client.post("/admin/onboarding/legaldocumentset/add/", form)

    assert response.status_code == 302, response.content[:2000]
    document = LegalDocument.objects.get(document_set__version="2026-06")
    assert bytes(document.content) == content
    assert document.content_type == "application/pdf"
    assert document.hash == "sha256:" + hashlib.sha256(content).hexdigest()


def test_a_legal_document_needs_its_content(client, sandbox):
    operator(client, sandbox)
    form = {
        "program": sandbox["consumerProgramId"],
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

    response = client.post("/admin/onboarding/legaldocumentset/add/", form)

    assert response.status_code == 200
    assert not LegalDocumentSet.objects.filter(version="2026-07").exists()


def test_stage_actions_move_applications_through_the_service(client, sandbox):
    operator(client, sandbox)
    application_id = sandbox["customer2"]["applicationId"]

    allowed = client.post(
        "/admin/onboarding/application/",
        {"action": "move_to_in_progress", "_selected_action": [application_id]},
    )
    refused = client.post(
        "/admin/onboarding/application/",
        {"action": "move_to_approved", "_selected_action": [application_id]},
    )

    assert allowed.status_code == 302 and refused.status_code == 302
    assert Application.objects.get(id=application_id).workflow_stage == "IN_PROGRESS"


def test_verification_outcomes_set_in_admin_are_what_the_provider_reports(client, sandbox):
    operator(client, sandbox)
    application = Application.objects.get(id=sandbox["customer2"]["applicationId"])
    page = client.get(f"/admin/onboarding/application/{application.id}/change/")
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

    response = client.post(f"/admin/onboarding/application/{application.id}/change/", form)

    assert response.status_code == 302, response.content[:3000]
    step = VerificationStep.objects.get(application=application)
    assert (step.status, step.rejection_type, step.doc_country) == ("FAILED", "FINAL", "FR")
